#!/usr/bin/env bash
# Installs the real services and clients the tests talk to, if missing:
# kcat (a librdkafka client), ZooKeeper 3.8, Chromium and Prometheus (promtool),
# all Debian packages; Python's confluent-kafka (librdkafka's admin client), kafka-python and pyarrow
# (a Parquet reader) from PyPI;
# Maven and a JDK fetch, compile and run the HDFS mini cluster and its KDC
# (scripts/hdfs; Hadoop's jars are cached in ~/.m2, fetched here) and Apache Kafka's
# command-line tools, Connect and Streams (scripts/kafka, fetched here so
# tests do not wait on Maven Central); S3Proxy, an S3-compatible server
# (scripts/s3); Apache Iceberg's REST catalog server (scripts/iceberg-rest).
# Safe to run repeatedly; does nothing when everything is present.
set -euo pipefail

need=()
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ -x /usr/share/zookeeper/bin/zkServer.sh ] || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
# Headless Chromium opens the audit's HTML report in tests (audit/report).
command -v chromium >/dev/null 2>&1 || need+=(chromium chromium-driver)
# promtool lints the metrics exposition and the alert rules (deploy/).
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
# kinit fills the ticket cache the Kerberized HDFS tests load with
# (loader/hdfs_kerberos_test.go); the KDC itself is Hadoop's MiniKdc.
command -v kinit >/dev/null 2>&1 || need+=(krb5-user)

if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

here="$(cd "$(dirname "$0")" && pwd)"

# Hadoop's HDFS mini cluster and MiniKdc (internal/testenv/hdfs.go), resolved
# once into ~/.m2 like Kafka's jars below.
[ -f "$HOME/.m2/repository/org/apache/hadoop/hadoop-minikdc/3.3.6/hadoop-minikdc-3.3.6.jar" ] ||
  mvn -q -B -f "$here/hdfs/pom.xml" dependency:resolve -DincludeScope=runtime >/dev/null 2>&1 ||
  echo "warning: could not fetch Hadoop's mini cluster from Maven Central now; the tests will try again" >&2

# Apache Kafka's tools, Connect worker and Streams for the compatibility
# tests (internal/testenv/javatools.go, kafkaconnect.go, kafkastreams.go):
# resolved once into ~/.m2; a failure here only delays the download to the
# first test that needs them.
for jar in kafka-tools:tools connect-runtime:connect kafka-streams:streams; do
  [ -f "$HOME/.m2/repository/org/apache/kafka/${jar%%:*}/4.4.0/${jar%%:*}-4.4.0.jar" ] ||
    mvn -q -B -f "$here/kafka/${jar#*:}-pom.xml" dependency:resolve -DincludeScope=runtime >/dev/null 2>&1 ||
    echo "warning: could not fetch ${jar%%:*} from Maven Central now; the tests will try again" >&2
done

# S3Proxy, the S3-compatible server the S3 warehouse's tests start
# (internal/testenv/s3.go), resolved once into ~/.m2 like the jars above.
[ -f "$HOME/.m2/repository/org/gaul/s3proxy/4.1.0/s3proxy-4.1.0.jar" ] ||
  mvn -q -B -f "$here/s3/pom.xml" dependency:resolve -DincludeScope=runtime >/dev/null 2>&1 ||
  echo "warning: could not fetch S3Proxy from Maven Central now; the tests will try again" >&2

# Apache Iceberg's REST catalog server, which the loader's REST catalog
# tests start (internal/testenv/icebergrest.go), resolved once into ~/.m2.
[ -f "$HOME/.m2/repository/org/apache/iceberg/iceberg-open-api/1.10.0/iceberg-open-api-1.10.0-test-fixtures.jar" ] ||
  mvn -q -B -f "$here/iceberg-rest/pom.xml" dependency:resolve -DincludeScope=runtime >/dev/null 2>&1 ||
  echo "warning: could not fetch Iceberg's REST catalog server from Maven Central now; the tests will try again" >&2

# Apache Spark reads the loader's Iceberg tables (loader/iceberg_spark_test.go):
# pyspark from PyPI (about 350 MB installed) and Iceberg's Spark runtime jar
# (47 MB) from Maven Central; about 45 s on the machine this was measured on.
if ! python3 -c 'import pyspark' >/dev/null 2>&1; then
  echo "installing: pyspark (PyPI)"
  python3 -m pip install -q 'pyspark==3.5.7' ||
    python3 -m pip install -q --break-system-packages 'pyspark==3.5.7'
fi
[ -f "$HOME/.m2/repository/org/apache/iceberg/iceberg-spark-runtime-3.5_2.12/1.10.0/iceberg-spark-runtime-3.5_2.12-1.10.0.jar" ] ||
  mvn -q -B -f "$here/spark/pom.xml" dependency:resolve -DincludeScope=runtime >/dev/null 2>&1 ||
  echo "warning: could not fetch Iceberg's Spark runtime from Maven Central now; the tests will try again" >&2

# The Apache Kafka broker, a source of the mirror's tests (mirror/kafka_test.go)
# and the bench's peer.
"$here/bench/install-kafka.sh" ||
  echo "warning: could not install Apache Kafka now; the tests that need it fail until it is" >&2

# librdkafka's admin client and Confluent's schema registry client, through
# Python (broker/librdkafka_admin_test.go, tests/system/registry_security_test.go);
# the avro, json and protobuf extras bring the serializers' fastavro,
# jsonschema and protobuf (schema/registry/python_serde_test.go).
if ! python3 -c 'import confluent_kafka.schema_registry, fastavro, jsonschema, google.protobuf' >/dev/null 2>&1; then
  echo "installing: confluent-kafka[schemaregistry,avro,json,protobuf] (PyPI)"
  python3 -m pip install -q 'confluent-kafka[schemaregistry,avro,json,protobuf]==2.16.1' ||
    python3 -m pip install -q --break-system-packages 'confluent-kafka[schemaregistry,avro,json,protobuf]==2.16.1'
fi

# kafka-python, the pure-Python client, produces and consumes in a group
# (broker/kafka_python_test.go, scripts/kafka/kafka_python_group.py).
if ! python3 -c 'import kafka.admin' >/dev/null 2>&1; then
  echo "installing: kafka-python (PyPI)"
  python3 -m pip install -q 'kafka-python==3.0.12' ||
    python3 -m pip install -q --break-system-packages 'kafka-python==3.0.12'
fi

# pyarrow reads the loader's Parquet files back, as analysts' tools do
# (loader/parquet_test.go, loader/testdata/read_parquet.py).
if ! python3 -c 'import pyarrow.dataset' >/dev/null 2>&1; then
  echo "installing: pyarrow (PyPI)"
  python3 -m pip install -q 'pyarrow==23.0.1' ||
    python3 -m pip install -q --break-system-packages 'pyarrow==23.0.1'
fi

# pyiceberg reads the loader's Iceberg tables back as another engine would
# (loader/iceberg_test.go, loader/testdata/read_iceberg.py).
if ! python3 -c 'import pyiceberg.table' >/dev/null 2>&1; then
  echo "installing: pyiceberg (PyPI)"
  python3 -m pip install -q 'pyiceberg==0.12.0' ||
    python3 -m pip install -q --break-system-packages 'pyiceberg==0.12.0'
fi
