package warehouse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3 is a warehouse in an S3 bucket under a key prefix (s3://bucket/prefix),
// on Amazon S3 or any store speaking its API with conditional writes
// (If-None-Match: * on PUT).
//
// An object store has objects, not files and directories, and no rename.
// This implementation keeps the package's promises as follows:
//   - Directories are key prefixes: ReadDir lists one level (the delimiter
//     "/"), a directory exists while an object lies under it, and MkdirAll
//     does nothing.
//   - A file written through Create is uploaded in parts (multipart upload
//     past one part) and appears whole when Close returns nil, never
//     partially: an unfinished upload is invisible to every reader.
//   - CreateExclusive is one PUT with If-None-Match: *, so of two callers
//     racing for a name exactly one wins, which locks and the loader's
//     commit are built on.
//   - Rename is a server-side copy followed by deleting the old name: the
//     new name appears whole in one step, but for a moment both names
//     exist. The loader only renames what it may repeat (moving committed
//     files into place); its commit is a conditional create instead
//     (WholeObjectWrites).
type S3 struct {
	client *s3.Client
	bucket string
	prefix string // "" or ends in "/"
	url    string
}

// S3Options say how to reach an S3 warehouse beyond what the SDK's usual
// chain finds (the environment, the shared config and credentials files,
// web identity, the instance's role).
type S3Options struct {
	// Endpoint is the store's URL, for S3-compatible stores; empty:
	// AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else the shared config
	// file's endpoint_url, else Amazon S3's own.
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// PathStyle addresses buckets in the path (http://host/bucket/key)
	// rather than the host name; always so when the endpoint's host is an
	// IP address or localhost, which cannot carry a bucket's name.
	PathStyle bool `yaml:"path_style" json:"path_style,omitempty"`
	// Region is the bucket's region; empty: AWS_REGION, else the shared
	// config's, else us-east-1 (which S3-compatible stores accept).
	Region string `yaml:"region" json:"region,omitempty"`
}

// s3PartSize is the size of each part of a multipart upload: a file
// smaller than one part is one PUT. S3 allows 10,000 parts, so a file may
// grow to 80 GiB; the loader's roll at 128 MiB at most by default.
const s3PartSize = 8 << 20

// s3MaxCopy is the largest object one CopyObject may copy (5 GiB).
const s3MaxCopy = 5 << 30

// openS3 opens an S3 warehouse, for writers and readers alike: a bucket is
// never created (that is an administrator's decision, with its region,
// policy and lifecycle rules), and a prefix needs no creating.
func openS3(u *url.URL, o S3Options) (*S3, error) {
	bucket := u.Host
	if bucket == "" {
		return nil, fmt.Errorf("warehouse URL %s: no bucket (s3://bucket/prefix)", u.Redacted())
	}
	prefix := strings.Trim(path.Clean("/"+u.Path), "/")
	if prefix != "" {
		prefix += "/"
	}
	where := "s3://" + bucket + "/" + prefix
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	defer cancel()
	var loadOpts []func(*config.LoadOptions) error
	if o.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: loading the AWS configuration: %w", where, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	var endpoint string
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		if so.BaseEndpoint != nil {
			endpoint = *so.BaseEndpoint
		}
		so.UsePathStyle = so.UsePathStyle || o.PathStyle || hostIsIP(endpoint)
	})
	w := &S3{client: client, bucket: bucket, prefix: prefix, url: where}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		at := ""
		if endpoint != "" {
			at = " at " + endpoint
		}
		if isS3NotFound(err) {
			return nil, fmt.Errorf("warehouse %s: bucket %q does not exist%s (the loader does not create buckets): %w", where, bucket, at, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("warehouse %s is not usable%s (credentials come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared files, AWS_WEB_IDENTITY_TOKEN_FILE, or the instance's role): %w", where, at, err)
	}
	return w, nil
}

// hostIsIP reports whether an endpoint URL's host is an IP address, or
// localhost: neither can carry a bucket's name in front of it.
func hostIsIP(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	return net.ParseIP(u.Hostname()) != nil || u.Hostname() == "localhost"
}

func (w *S3) String() string { return w.url }

func (w *S3) Close() error { return nil }

// key is the object key of a warehouse path.
func (w *S3) key(name string) (string, error) {
	c, err := clean(name)
	if err != nil {
		return "", err
	}
	return w.prefix + c, nil
}

// dirKey is the key prefix of a warehouse directory ("" or ending in "/").
func (w *S3) dirKey(name string) (string, error) {
	c, err := clean(name)
	if err != nil {
		return "", err
	}
	if c == "" {
		return w.prefix, nil
	}
	return w.prefix + c + "/", nil
}

// s3Timeout bounds one request that moves no file's data (HEAD, list,
// delete, small PUTs).
const s3Timeout = time.Minute

func s3ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s3Timeout)
}

func (w *S3) err(op, name string, err error) error {
	if isS3NotFound(err) {
		return &fs.PathError{Op: op, Path: w.url + name, Err: fs.ErrNotExist}
	}
	return fmt.Errorf("%s: %s %s: %w", w.url, op, name, err)
}

func isS3NotFound(err error) bool {
	var nk *types.NoSuchKey
	var nf *types.NotFound
	var nb *types.NoSuchBucket
	if errors.As(err, &nk) || errors.As(err, &nf) || errors.As(err, &nb) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchKey")
}

func s3ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func (w *S3) Create(name string) (io.WriteCloser, error) {
	k, err := w.key(name)
	if err != nil {
		return nil, err
	}
	return &s3Writer{w: w, key: k, name: name}, nil
}

// CreateExclusive writes name with one PUT under If-None-Match: *. A
// refused PUT whose object holds exactly data is taken as this call's own
// (the SDK retried a PUT whose answer was lost): lock files and manifests
// carry a random token or a run id, so another writer's never matches.
func (w *S3) CreateExclusive(name string, data []byte) error {
	k, err := w.key(name)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		ctx, cancel := s3ctx()
		_, err = w.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(w.bucket), Key: aws.String(k), Body: bytes.NewReader(data),
			ContentLength: aws.Int64(int64(len(data))), IfNoneMatch: aws.String("*"),
		})
		cancel()
		switch code := s3ErrorCode(err); {
		case err == nil:
			return nil
		case code == "PreconditionFailed":
			if got, rerr := ReadFile(w, name); rerr == nil && bytes.Equal(got, data) {
				return nil
			}
			return &fs.PathError{Op: "create", Path: w.url + name, Err: fs.ErrExist}
		case code == "ConditionalRequestConflict" && attempt < 5:
			// A concurrent write of the same key was in progress: S3
			// asks for the request to be repeated.
			time.Sleep(time.Duration(50<<attempt) * time.Millisecond)
		case code == "NotImplemented":
			return fmt.Errorf("%s: %s does not support conditional writes (If-None-Match: * on PUT), which the loader's commit and locks need: %w", w.url, name, err)
		default:
			return w.err("create", name, err)
		}
	}
}

// WholeObjectWrites reports whether a write through w appears whole or not
// at all, so that a file need not be written under a temporary name and
// renamed: an object store's PUT.
// A wrapper with an Unwrap() FS method (a test's) is looked through.
func WholeObjectWrites(w FS) bool {
	for {
		switch x := w.(type) {
		case *Batch:
			w = x.FS
		case interface{ Unwrap() FS }:
			w = x.Unwrap()
		default:
			_, ok := w.(*S3)
			return ok
		}
	}
}

func (w *S3) Open(name string) (io.ReadCloser, error) {
	k, err := w.key(name)
	if err != nil {
		return nil, err
	}
	// The answer must come within s3Timeout; the body then streams for
	// as long as the reader takes, until Close.
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(s3Timeout, cancel)
	out, err := w.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(k)})
	timer.Stop()
	if err != nil {
		cancel()
		return nil, w.err("open", name, err)
	}
	return s3Body{ReadCloser: out.Body, cancel: cancel}, nil
}

// s3Body is an object being read; Close ends its request.
type s3Body struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b s3Body) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// Rename copies oldname to newname on the server, then deletes oldname.
func (w *S3) Rename(oldname, newname string) error {
	ok, err := w.key(oldname)
	if err != nil {
		return err
	}
	nk, err := w.key(newname)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*s3Timeout)
	defer cancel()
	head, err := w.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(ok)})
	if err != nil {
		return w.err("rename", oldname, err)
	}
	if aws.ToInt64(head.ContentLength) > s3MaxCopy {
		return fmt.Errorf("%s: rename %s: %d bytes is more than one server-side copy may move (5 GiB); roll files smaller", w.url, oldname, aws.ToInt64(head.ContentLength))
	}
	_, err = w.client.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket: aws.String(w.bucket), Key: aws.String(nk),
		CopySource: aws.String(url.PathEscape(w.bucket) + "/" + escapeKey(ok)),
	})
	if err != nil {
		return w.err("rename", oldname, err)
	}
	if _, err := w.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(ok)}); err != nil {
		return w.err("rename", oldname, err)
	}
	return nil
}

// escapeKey escapes a key for CopySource, keeping its slashes.
func escapeKey(k string) string {
	parts := strings.Split(k, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// Remove deletes a file; a directory is only a prefix, and goes with its
// last file.
// RenameNoReplace reads oldname, writes it to newname with one conditional
// PUT (CreateExclusive) and deletes oldname: newname appears whole or not
// at all, and only if it did not exist.
func (w *S3) RenameNoReplace(oldname, newname string) error {
	data, err := ReadFile(w, oldname)
	if err != nil {
		return err
	}
	if err := w.CreateExclusive(newname, data); err != nil {
		return err
	}
	return w.Remove(oldname)
}

func (w *S3) Remove(name string) error {
	k, err := w.key(name)
	if err != nil {
		return err
	}
	ctx, cancel := s3ctx()
	defer cancel()
	if _, err := w.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(k)}); err != nil && !isS3NotFound(err) {
		return w.err("remove", name, err)
	}
	return nil
}

// RemoveAll deletes every object under name and aborts every unfinished
// multipart upload there (a writer killed mid-file leaves one, invisible
// but stored).
func (w *S3) RemoveAll(name string) error {
	dk, err := w.dirKey(name)
	if err != nil {
		return err
	}
	if dk == w.prefix {
		return errors.New("warehouse: refusing to remove the warehouse root")
	}
	if err := w.Remove(name); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*s3Timeout)
	defer cancel()
	pages := s3.NewListObjectsV2Paginator(w.client, &s3.ListObjectsV2Input{Bucket: aws.String(w.bucket), Prefix: aws.String(dk)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return w.err("remove", name, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		del := &types.Delete{Quiet: aws.Bool(true)}
		for _, o := range page.Contents {
			del.Objects = append(del.Objects, types.ObjectIdentifier{Key: o.Key})
		}
		out, err := w.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(w.bucket), Delete: del})
		if err != nil {
			return w.err("remove", name, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("%s: removing %s: %d objects not deleted, the first %s: %s", w.url, name, len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Message))
		}
	}
	uploads := s3.NewListMultipartUploadsPaginator(w.client, &s3.ListMultipartUploadsInput{Bucket: aws.String(w.bucket), Prefix: aws.String(dk)})
	for uploads.HasMorePages() {
		page, err := uploads.NextPage(ctx)
		if err != nil {
			return w.err("remove", name, err)
		}
		for _, u := range page.Uploads {
			_, err := w.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(w.bucket), Key: u.Key, UploadId: u.UploadId})
			if err != nil && s3ErrorCode(err) != "NoSuchUpload" {
				return w.err("remove", name, err)
			}
		}
	}
	return nil
}

// ReadDir lists one level under name. A directory nothing lies under does
// not exist, except the warehouse's root.
func (w *S3) ReadDir(name string) ([]fs.FileInfo, error) {
	dk, err := w.dirKey(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*s3Timeout)
	defer cancel()
	var out []fs.FileInfo
	pages := s3.NewListObjectsV2Paginator(w.client, &s3.ListObjectsV2Input{Bucket: aws.String(w.bucket), Prefix: aws.String(dk), Delimiter: aws.String("/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, w.err("readdir", name, err)
		}
		for _, p := range page.CommonPrefixes {
			base := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(p.Prefix), dk), "/")
			if base != "" {
				out = append(out, s3Info{name: base, dir: true})
			}
		}
		for _, o := range page.Contents {
			base := strings.TrimPrefix(aws.ToString(o.Key), dk)
			if base != "" {
				out = append(out, s3Info{name: base, size: aws.ToInt64(o.Size), mod: aws.ToTime(o.LastModified)})
			}
		}
	}
	if len(out) == 0 && dk != w.prefix {
		return nil, &fs.PathError{Op: "readdir", Path: w.url + name, Err: fs.ErrNotExist}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Stat describes a file, or a directory when objects lie under name.
func (w *S3) Stat(name string) (fs.FileInfo, error) {
	k, err := w.key(name)
	if err != nil {
		return nil, err
	}
	base := path.Base("/" + strings.TrimSuffix(k, "/"))
	ctx, cancel := s3ctx()
	defer cancel()
	if k != w.prefix {
		head, err := w.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(k)})
		if err == nil {
			return s3Info{name: base, size: aws.ToInt64(head.ContentLength), mod: aws.ToTime(head.LastModified)}, nil
		}
		if !isS3NotFound(err) {
			return nil, w.err("stat", name, err)
		}
	}
	dk, _ := w.dirKey(name)
	list, err := w.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(w.bucket), Prefix: aws.String(dk), MaxKeys: aws.Int32(1)})
	if err != nil {
		return nil, w.err("stat", name, err)
	}
	if len(list.Contents) == 0 && dk != w.prefix {
		return nil, &fs.PathError{Op: "stat", Path: w.url + name, Err: fs.ErrNotExist}
	}
	return s3Info{name: base, dir: true}, nil
}

// MkdirAll does nothing: a prefix exists once an object lies under it.
func (w *S3) MkdirAll(name string) error {
	_, err := w.key(name)
	return err
}

// s3Info describes an object, or a prefix as a directory.
type s3Info struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i s3Info) Name() string       { return i.name }
func (i s3Info) Size() int64        { return i.size }
func (i s3Info) ModTime() time.Time { return i.mod }
func (i s3Info) IsDir() bool        { return i.dir }
func (i s3Info) Sys() any           { return nil }
func (i s3Info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
