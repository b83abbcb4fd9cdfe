// Package kafkaerr is the one place where the broker's errors become the
// Kafka error codes a client sees: an error made with New carries its code
// and a message for a person (Code reads it back; anything else is
// UNKNOWN_SERVER_ERROR), OfStorage maps the storage engine's errors and
// OfCluster the cluster metadata's.
// A handler answers with the code and the message; no other package picks
// codes for errors it did not make.
package kafkaerr

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
)

// Error carries the Kafka error code a client should see along with a
// message for a person.
type Error struct {
	code *kerr.Error
	msg  string
}

func (e *Error) Error() string { return e.msg }

// New is an error a client sees as code, with the message for a person.
func New(code *kerr.Error, format string, args ...any) error {
	return &Error{code: code, msg: fmt.Sprintf(format, args...)}
}

// Code is the Kafka error code of err: its own for an Error,
// UNKNOWN_SERVER_ERROR for any other.
func Code(err error) int16 {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.code.Code
	}
	return kerr.UnknownServerError.Code
}

// OfStorage maps the storage engine's errors to Kafka error codes; any
// other is KAFKA_STORAGE_ERROR.
func OfStorage(err error) int16 {
	switch {
	case errors.Is(err, log.ErrCorruptBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, log.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, log.ErrUnsupportedMagic):
		return kerr.UnsupportedForMessageFormat.Code
	case errors.Is(err, log.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, log.ErrTxnEndedMeanwhile):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, log.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, log.ErrClosed), errors.Is(err, context.Canceled):
		// The broker is shutting down; the client retries elsewhere or later.
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.KafkaStorageError.Code
}
