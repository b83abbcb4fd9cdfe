package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/consumer"
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
	zk := fs.String("zookeeper", "", "consume as a member of --group, coordinated through this ZooKeeper `host:port/chroot` (the paper's consumer groups)")
	group := fs.String("group", "", "consumer group (with --zookeeper)")
	var sec clientFlags
	sec.register(fs, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return errors.New("--topic is required")
	}
	p := recordPrinter{key: *printKey, offset: *printOffset, max: *maxMessages}
	if *zk != "" || *group != "" {
		if *zk == "" || *group == "" {
			return errors.New("--zookeeper and --group go together")
		}
		start := consumer.Largest
		if *from == "beginning" {
			start = consumer.Smallest
		}
		opts, err := sec.kgoOpts()
		if err != nil {
			return err
		}
		return consumeGroup(ctx, consumer.Config{ZooKeeper: *zk, Group: *group, Topics: []string{*topic}, Start: start, Logger: slog.Default(), ClientOptions: opts, Listener: sec.kafka.Protocol()}, p)
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
	cl, err := sec.newKafkaClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	p.out = bufio.NewWriter(os.Stdout)
	defer p.out.Flush()
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
			if p.print(it.Next()) {
				return nil
			}
		}
		p.out.Flush()
	}
}

// consumeGroup prints records as one member of a ZooKeeper consumer group;
// offsets are committed periodically and when interrupted.
func consumeGroup(ctx context.Context, cfg consumer.Config, p recordPrinter) error {
	g, err := consumer.Join(ctx, cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	p.out = bufio.NewWriter(os.Stdout)
	defer p.out.Flush()
	for r, err := range g.Records(ctx) {
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		// Next blocks when the log is exhausted, so each line goes out now.
		done := p.print(r)
		p.out.Flush()
		if done {
			return nil
		}
	}
	return nil
}

// recordPrinter writes records one per line, as the flags ask.
type recordPrinter struct {
	out         *bufio.Writer
	key, offset bool
	max, seen   int
}

// print writes r and reports whether --max-messages is reached.
func (p *recordPrinter) print(r *kgo.Record) bool {
	if p.offset {
		fmt.Fprintf(p.out, "%d\t%d\t", r.Partition, r.Offset)
	}
	if p.key {
		p.out.Write(r.Key)
		p.out.WriteByte('\t')
	}
	p.out.Write(r.Value)
	p.out.WriteByte('\n')
	p.seen++
	return p.max > 0 && p.seen >= p.max
}
