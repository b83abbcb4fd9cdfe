#!/usr/bin/env bash
# Installs the real services and clients the tests talk to, if missing:
# kcat (a librdkafka client), ZooKeeper 3.8, Chromium and Prometheus (promtool),
# all Debian packages;
# Maven and a JDK fetch, compile and run the HDFS mini cluster (scripts/hdfs;
# its jars are cached in ~/.m2 after the first run).
# Safe to run repeatedly; does nothing when everything is present.
set -euo pipefail

need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ -x /usr/share/zookeeper/bin/zkServer.sh ] || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
# Headless Chromium opens the audit's HTML report in tests (audit/report).
command -v chromium >/dev/null 2>&1 || need+=(chromium chromium-driver)
# promtool lints the metrics exposition and the alert rules (deploy/).
command -v promtool >/dev/null 2>&1 || need+=(prometheus)

if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
