package main

import (
	"flag"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// hdfsFlags say how to reach an HDFS warehouse's cluster: its Hadoop
// configuration and Kerberos credentials (warehouse.HDFSOptions), and an S3
// warehouse's store (warehouse.S3Options; credentials come from the AWS
// SDK's usual chain). Every subcommand that opens a warehouse takes them.
type hdfsFlags struct {
	o  warehouse.HDFSOptions
	s3 warehouse.S3Options
}

func (f *hdfsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.o.HadoopConf, "hadoop-conf", "", "`DIR` of the HDFS cluster's core-site.xml and hdfs-site.xml (fs.defaultFS, nameservices, NameNodes, security); default HADOOP_CONF_DIR, else $HADOOP_HOME/etc/hadoop")
	fs.StringVar(&f.o.Principal, "hdfs-principal", "", "Kerberos `PRINCIPAL` (user@REALM) to log in to HDFS as: with --hdfs-keytab, or from the ticket cache kinit filled")
	fs.StringVar(&f.o.Keytab, "hdfs-keytab", "", "keytab `FILE` holding --hdfs-principal's keys; default: the ticket cache (KRB5CCNAME, else /tmp/krb5cc_<uid>)")
	fs.StringVar(&f.o.Krb5Conf, "krb5-conf", "", "Kerberos configuration `FILE`; default KRB5_CONFIG, else /etc/krb5.conf")
	fs.StringVar(&f.o.DataTransferProtection, "hdfs-data-transfer-protection", "", "authentication, integrity or privacy, as the DataNodes' dfs.data.transfer.protection requires; default: the Hadoop configuration's")
	fs.StringVar(&f.s3.Endpoint, "s3-endpoint", "", "`URL` of an S3-compatible store for an s3:// warehouse; default AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else Amazon S3")
	fs.BoolVar(&f.s3.PathStyle, "s3-path-style", false, "address S3 buckets in the path (http://host/bucket/key), as many S3-compatible stores want; always so for an endpoint given by IP address or localhost")
	fs.StringVar(&f.s3.Region, "s3-region", "", "`REGION` of the S3 bucket; default AWS_REGION, else the shared config's, else us-east-1")
}

func (f *hdfsFlags) options() warehouse.Options { return warehouse.Options{HDFS: f.o, S3: f.s3} }
