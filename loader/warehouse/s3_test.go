package warehouse_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// A file larger than one part goes up as a multipart upload: nothing is
// visible under its name until Close, then all of it; a writer that never
// closes leaves an unfinished upload, which RemoveAll of its directory
// aborts.
func TestS3MultipartUploadAppearsWhole(t *testing.T) {
	url := testenv.S3Warehouse(t)
	w, err := warehouse.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 21<<20) // two full parts of 8 MiB and a last one
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	f, err := w.Create("big/file.avro")
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 100_000 {
		if _, err := f.Write(data[off:min(off+100_000, len(data))]); err != nil {
			t.Fatal(err)
		}
		if off > 17<<20 {
			if ok, err := warehouse.Exists(w, "big/file.avro"); err != nil || ok {
				t.Fatalf("after %d bytes of %d, before Close: exists=%v, %v", off, len(data), ok, err)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := warehouse.ReadFile(w, "big/file.avro")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (equal: %v), %v", len(got), bytes.Equal(got, data), err)
	}

	abandoned, err := w.Create("run/abandoned.avro")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := abandoned.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := warehouse.WriteFile(w, "run/run.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	bucket := strings.TrimPrefix(strings.Split(url, "/warehouse")[0], "s3://")
	client := testenv.StartS3(t).Client()
	uploads := func() int {
		out, err := client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Uploads)
	}
	if n := uploads(); n != 1 {
		t.Fatalf("%d unfinished uploads, want the abandoned writer's", n)
	}
	if err := w.RemoveAll("run"); err != nil {
		t.Fatal(err)
	}
	if n := uploads(); n != 0 {
		t.Errorf("RemoveAll left %d unfinished uploads", n)
	}
	if _, err := w.ReadDir("run"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after RemoveAll: %v", err)
	}
}

// Of many writers racing to create one name, exactly one wins, and the
// others are told the name exists: the If-None-Match: * PUT that locks and
// commits are built on.
func TestS3CreateExclusiveRace(t *testing.T) {
	w, err := warehouse.Open(testenv.S3Warehouse(t))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, lost := 0, 0
		for i := range 8 {
			wg.Go(func() {
				err := w.CreateExclusive("race/"+string(rune('a'+round)), []byte{byte(i)})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.Is(err, fs.ErrExist):
					lost++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if won != 1 || lost != 7 {
			t.Fatalf("round %d: %d won, %d lost; want 1 and 7", round, won, lost)
		}
	}
}

// The usual ways of reaching a store: the endpoint variables or the
// option, path-style addressing for an IP endpoint, credentials from the
// shared files; and clear errors for wrong credentials and a missing
// bucket.
func TestS3Configuration(t *testing.T) {
	url := testenv.S3Warehouse(t) // sets the environment
	srv := testenv.StartS3(t)
	check := func(t *testing.T, o warehouse.S3Options) {
		t.Helper()
		w, err := warehouse.OpenWith(url, warehouse.Options{S3: o})
		if err != nil {
			t.Fatal(err)
		}
		if err := warehouse.WriteFile(w, "probe", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("AWS_ENDPOINT_URL", func(t *testing.T) {
		t.Setenv("AWS_ENDPOINT_URL_S3", "")
		os.Unsetenv("AWS_ENDPOINT_URL_S3")
		t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
		check(t, warehouse.S3Options{})
	})
	t.Run("option", func(t *testing.T) {
		t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9") // the option wins
		check(t, warehouse.S3Options{Endpoint: srv.Endpoint})
	})
	t.Run("localhost", func(t *testing.T) {
		t.Setenv("AWS_ENDPOINT_URL_S3", strings.Replace(srv.Endpoint, "127.0.0.1", "localhost", 1))
		check(t, warehouse.S3Options{})
	})
	t.Run("path-style asked for", func(t *testing.T) {
		// A host name that reaches the server, though not a bucket's
		// subdomain of it: only path-style addressing works.
		host, err := os.Hostname()
		if err != nil {
			t.Skip(err)
		}
		addrs, err := net.LookupHost(host)
		if err != nil || len(addrs) == 0 {
			t.Skipf("this machine's name %s does not resolve: %v", host, err)
		}
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
				t.Skipf("this machine's name %s is %v, not only loopback: tests reach loopback only", host, addrs)
			}
		}
		t.Setenv("AWS_ENDPOINT_URL_S3", strings.Replace(srv.Endpoint, "127.0.0.1", host, 1))
		check(t, warehouse.S3Options{PathStyle: true})
	})
	t.Run("shared credentials file", func(t *testing.T) {
		creds := filepath.Join(t.TempDir(), "credentials")
		os.WriteFile(creds, []byte("[loader]\naws_access_key_id = "+srv.AccessKey+"\naws_secret_access_key = "+srv.SecretKey+"\n"), 0o600)
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
		t.Setenv("AWS_PROFILE", "loader")
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		os.Unsetenv("AWS_ACCESS_KEY_ID")
		os.Unsetenv("AWS_SECRET_ACCESS_KEY")
		check(t, warehouse.S3Options{})
	})
	t.Run("wrong secret", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
		_, err := warehouse.Open(url)
		if err == nil || !strings.Contains(err.Error(), "is not usable") || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
			t.Fatalf("wrong secret: %v, want an error naming where credentials come from", err)
		}
	})
	t.Run("missing bucket", func(t *testing.T) {
		_, err := warehouse.Open("s3://no-such-bucket-here/x")
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `bucket "no-such-bucket-here" does not exist`) {
			t.Fatalf("missing bucket: %v", err)
		}
	})
}
