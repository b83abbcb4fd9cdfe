package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Server is a real S3-compatible server: S3Proxy (org.gaul:s3proxy from
// Maven Central, scripts/s3/pom.xml) over a local directory, with
// signature-checked credentials. Its filesystem store creates objects
// under If-None-Match: * atomically, as S3 does.
type S3Server struct {
	Endpoint  string // http://127.0.0.1:port
	AccessKey string
	SecretKey string
	stdin     interface{ Close() error }
}

var (
	s3Once   sync.Once
	s3Shared *S3Server
	s3Err    error
	s3Seq    atomic.Int64
)

const s3InstallHint = "apt-get install -y default-jdk-headless maven (scripts/install-deps.sh does it); Maven then fetches S3Proxy from Maven Central once"

var s3Proxy = javaLauncher{
	dir: "s3", pom: "pom.xml", cacheName: "s3proxy", mvnArgs: []string{"-DincludeScope=runtime"},
	what: "S3Proxy (an S3-compatible server)", installHint: s3InstallHint,
}

// StartS3 returns the S3-compatible server shared by the test binary (it
// starts in a second or two; tests keep apart by their own bucket, see
// S3Warehouse). It stops, and its data is removed, when the test binary
// exits however it exits.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	Needs(t, JVM)
	s3Once.Do(func() {
		var err error
		for range 3 { // a free port can be taken before the server binds it
			if s3Shared, err = startS3(); err == nil {
				break
			}
		}
		s3Err = err
	})
	if s3Err != nil {
		t.Fatalf("starting S3Proxy: %v", s3Err)
	}
	return s3Shared
}

// S3Warehouse returns an s3:// URL of a bucket of its own for this test,
// and points the AWS SDK's usual chain at the server through the
// environment (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, ...), which child
// processes inherit: so it must not be used by parallel tests.
func S3Warehouse(t testing.TB) string {
	t.Helper()
	s := StartS3(t)
	for k, v := range s.Env() {
		t.Setenv(k, v)
	}
	bucket := fmt.Sprintf("t%d-%s", s3Seq.Add(1), strings.ToLower(chrootName(t.Name())))
	bucket = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, bucket)
	if len(bucket) > 63 {
		bucket = bucket[:63]
	}
	bucket = strings.TrimRight(bucket, "-")
	if err := s.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	return "s3://" + bucket + "/warehouse"
}

// Env is the environment that points the AWS SDK at the server.
func (s *S3Server) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_S3":   s.Endpoint,
		"AWS_ACCESS_KEY_ID":     s.AccessKey,
		"AWS_SECRET_ACCESS_KEY": s.SecretKey,
		"AWS_REGION":            "us-east-1",
		// Nothing of this machine's own AWS setup may leak in.
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_PROFILE":                 "",
	}
}

// Client is an S3 client of the server, for tests to look at a bucket as
// any reader would.
func (s *S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// CreateBucket creates a bucket.
func (s *S3Server) CreateBucket(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("creating bucket %s on %s: %w", name, s.Endpoint, err)
	}
	return nil
}

func startS3() (*S3Server, error) {
	cp, _, err := s3Proxy.classpath()
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java is not installed; install it with: %s", s3InstallHint)
	}
	dir, err := os.MkdirTemp("", "tributary-s3-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &S3Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), AccessKey: "tributary-test", SecretKey: "tributary-test-secret"}
	conf := fmt.Sprintf(`s3proxy.endpoint=%s
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=%s
s3proxy.credential=%s
jclouds.provider=filesystem
jclouds.filesystem.basedir=%s/data
`, s.Endpoint, s.AccessKey, s.SecretKey, dir)
	logback := `<configuration><appender name="E" class="ch.qos.logback.core.ConsoleAppender"><encoder><pattern>%d %level %logger{20} %msg%n</pattern></encoder></appender><root level="WARN"><appender-ref ref="E"/></root></configuration>`
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "s3proxy.conf"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "logback.xml"), []byte(logback), 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "s3proxy.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command("/bin/sh", "-c", watchdog, "s3proxy-watchdog",
		"-Xmx512m", "-XX:TieredStopAtLevel=1", "-Dlogback.configurationFile="+filepath.Join(dir, "logback.xml"),
		"-cp", cp, "org.gaul.s3proxy.Main", "--properties", filepath.Join(dir, "s3proxy.conf"))
	cmd.Env = append(os.Environ(), "JAVA="+java, "ZKDIR="+dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting S3Proxy: %w", err)
	}
	s.stdin = stdin
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.Endpoint + "/"); err == nil {
			resp.Body.Close()
			return s, nil // answers (403 without credentials)
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("S3Proxy exited before answering on %s (%v); its log:\n%s", s.Endpoint, err, logTail(logPath))
		case <-time.After(100 * time.Millisecond):
		}
	}
	stdin.Close()
	<-exited
	return nil, fmt.Errorf("S3Proxy did not answer on %s within 60s; its log:\n%s", s.Endpoint, logTail(logPath))
}
