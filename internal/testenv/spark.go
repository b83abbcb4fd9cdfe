package testenv

import (
	"os/exec"
	"testing"
)

const sparkInstallHint = "run scripts/install-deps.sh: pyspark from PyPI, and Maven fetches Iceberg's Spark runtime from Maven Central once"

var sparkIceberg = javaLauncher{
	dir: "spark", pom: "pom.xml", cacheName: "spark-iceberg", mvnArgs: []string{"-DincludeScope=runtime"},
	what: "Iceberg's Spark runtime", installHint: sparkInstallHint,
}

// SparkIcebergRuntime returns the path of Iceberg's Spark runtime jar
// (scripts/spark/pom.xml), which a pyspark session takes in spark.jars to
// read Iceberg tables, after checking that pyspark is installed.
func SparkIcebergRuntime(t testing.TB) string {
	t.Helper()
	Needs(t, JVM, Python)
	if exec.Command("python3", "-c", "import pyspark").Run() != nil {
		t.Fatalf("pyspark is missing: %s", sparkInstallHint)
	}
	cp, _, err := sparkIceberg.classpath()
	if err != nil {
		t.Fatalf("Iceberg's Spark runtime: %v", err)
	}
	return cp
}
