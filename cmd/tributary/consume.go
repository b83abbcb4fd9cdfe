package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register("consume", "print the records of a topic, one value per line, until interrupted", runConsume)
}

func runConsume(ctx context.Context, args []string) error {
	fs := newFlags("consume")
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated broker addresses")
	topic := fs.String("topic", "", "topic to consume (required)")
	from := fs.String("offset", "end", "where to start: beginning, end, or an offset number (with --partition)")
	partition := fs.Int("partition", -1, "consume only this partition")
	maxMessages := fs.Int("max-messages", 0, "stop after this many records (0: run until interrupted)")
	printKey := fs.Bool("print-key", false, "print key<TAB>value")
	printOffset := fs.Bool("print-offset", false, "print partition<TAB>offset<TAB> before each value")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return errors.New("--topic is required")
	}
	var start kgo.Offset
	switch *from {
	case "beginning":
		start = kgo.NewOffset().AtStart()
	case "end":
		start = kgo.NewOffset().AtEnd()
	default:
		n, err := strconv.ParseInt(*from, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("--offset %q: use beginning, end or a non-negative number", *from)
		}
		if *partition < 0 {
			return errors.New("--offset with a number needs --partition")
		}
		start = kgo.NewOffset().At(n)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(splitList(*brokers)...)}
	if *partition >= 0 {
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: {int32(*partition): start}}))
	} else {
		opts = append(opts, kgo.ConsumeTopics(*topic), kgo.ConsumeResetOffset(start))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	seen := 0
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("topic %s partition %d: %w", t, p, err))
		})
		if ferr != nil {
			return ferr
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			if *printOffset {
				fmt.Fprintf(out, "%d\t%d\t", r.Partition, r.Offset)
			}
			if *printKey {
				out.Write(r.Key)
				out.WriteByte('\t')
			}
			out.Write(r.Value)
			out.WriteByte('\n')
			seen++
			if *maxMessages > 0 && seen >= *maxMessages {
				return nil
			}
		}
		out.Flush()
	}
}
