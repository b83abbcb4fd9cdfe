package warehouse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// s3Writer uploads a file: one PUT if it ends within one part, else a
// multipart upload whose parts go up while the next is being filled (one
// in flight, so a file holds at most two parts in memory). The object
// appears only when Close completes the upload; a writer that fails or is
// abandoned aborts its upload, and one whose process dies leaves an
// unfinished upload that RemoveAll of its run's directory aborts.
type s3Writer struct {
	w    *S3
	key  string
	name string
	buf  bytes.Buffer

	uploadID string
	parts    []types.CompletedPart
	inflight sync.WaitGroup
	mu       sync.Mutex
	upErr    error
	closed   bool
}

func (f *s3Writer) Write(p []byte) (int, error) {
	if f.closed {
		return 0, errors.New("write to a closed file")
	}
	if err := f.failed(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		room := s3PartSize - f.buf.Len()
		take := min(room, len(p))
		f.buf.Write(p[:take])
		p = p[take:]
		if f.buf.Len() == s3PartSize {
			if err := f.sendPart(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

func (f *s3Writer) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.upErr
}

// sendPart starts uploading the buffered part, after the previous one is
// done.
func (f *s3Writer) sendPart() error {
	ctx := context.Background()
	if f.uploadID == "" {
		// The parts carry CRC32 checksums (the SDK computes them), and
		// S3 wants the upload to name the same algorithm.
		out, err := f.w.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
			Bucket: aws.String(f.w.bucket), Key: aws.String(f.key), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			return f.w.err("create", f.name, err)
		}
		f.uploadID = aws.ToString(out.UploadId)
	}
	f.inflight.Wait()
	if err := f.failed(); err != nil {
		return err
	}
	data := bytes.Clone(f.buf.Bytes())
	f.buf.Reset()
	num := int32(len(f.parts) + 1)
	f.parts = append(f.parts, types.CompletedPart{PartNumber: aws.Int32(num)})
	f.inflight.Add(1)
	go func() {
		defer f.inflight.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*s3Timeout)
		defer cancel()
		out, err := f.w.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String(f.w.bucket), Key: aws.String(f.key), UploadId: aws.String(f.uploadID),
			PartNumber: aws.Int32(num), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		f.mu.Lock()
		defer f.mu.Unlock()
		if err != nil {
			if f.upErr == nil {
				f.upErr = fmt.Errorf("%s: writing %s (part %d): %w", f.w.url, f.name, num, err)
			}
			return
		}
		f.parts[num-1].ETag = out.ETag
		f.parts[num-1].ChecksumCRC32 = out.ChecksumCRC32
	}()
	return nil
}

// Close uploads what is left and makes the object appear.
func (f *s3Writer) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*s3Timeout)
	defer cancel()
	if f.uploadID == "" {
		_, err := f.w.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(f.w.bucket), Key: aws.String(f.key),
			Body: bytes.NewReader(f.buf.Bytes()), ContentLength: aws.Int64(int64(f.buf.Len())),
		})
		f.buf = bytes.Buffer{}
		if err != nil {
			return f.w.err("write", f.name, err)
		}
		return nil
	}
	if f.buf.Len() > 0 {
		if err := f.sendPart(); err != nil {
			f.abort()
			return err
		}
	}
	f.inflight.Wait()
	if err := f.failed(); err != nil {
		f.abort()
		return err
	}
	_, err := f.w.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(f.w.bucket), Key: aws.String(f.key), UploadId: aws.String(f.uploadID),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: f.parts},
	})
	if err != nil {
		f.abort()
		return f.w.err("write", f.name, err)
	}
	return nil
}

func (f *s3Writer) abort() {
	f.inflight.Wait()
	ctx, cancel := s3ctx()
	defer cancel()
	f.w.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(f.w.bucket), Key: aws.String(f.key), UploadId: aws.String(f.uploadID)})
}
