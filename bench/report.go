package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// JSONRows is the report as one array of rows: every measured row with its
// system's configuration in "config", then the machine's ceiling as rows
// of system "machine" (tests "ceiling-loopback" and "ceiling-disk" in
// mb_per_sec, "ceiling-append-fsync" in p50_ms, the mean).
func (rep *Report) JSONRows() []JSONRow {
	var out []JSONRow
	for _, r := range rep.Rows {
		out = append(out, JSONRow{Row: r, Config: rep.Notes[r.System]})
	}
	if c := rep.Ceiling; c != nil {
		out = append(out,
			JSONRow{Row: Row{System: "machine", Test: TestCeiling + "-loopback", MBPerSec: c.LoopbackMBPerSec, Status: "ok"}},
			JSONRow{Row: Row{System: "machine", Test: TestCeiling + "-disk", MBPerSec: c.DiskMBPerSec, Status: "ok"}},
			JSONRow{Row: Row{System: "machine", Test: TestCeiling + "-append-fsync", P50Ms: c.AppendFsyncMicros / 1000, Status: "ok"}})
	}
	return out
}

// JSONRow is a Row with its system's configuration.
type JSONRow struct {
	Row
	Config string `json:"config,omitempty"`
}

// WriteJSON writes JSONRows, indented.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep.JSONRows())
}

// WriteTable writes the report as aligned text: the machine's ceiling, one
// section per test, then how each system was configured.
func (rep *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	if slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.Test == TestProduce }) {
		fmt.Fprintf(&b, "Paper benchmarks: %d messages of %d bytes per producer row; MB = 10^6 payload bytes; ×trib = ratio to Tributary in this run (to tributary-rf3 for three-node systems)\n",
			rep.Messages, rep.MessageSize)
	} else {
		fmt.Fprintf(&b, "Paper benchmarks: messages of %d bytes; ×trib = ratio to Tributary in this run (to tributary-rf3 for three-node systems)\n", rep.MessageSize)
	}
	if c := rep.Ceiling; c != nil {
		fmt.Fprintf(&b, "Machine ceiling: loopback TCP %.0f MB/s, sequential disk write %.0f MB/s (256 MiB + fdatasync), "+
			"append of %d bytes + fdatasync %.0f µs (the floor of an acks=all request answered after its own fsync)\n",
			c.LoopbackMBPerSec, c.DiskMBPerSec, appendFsyncBytes, c.AppendFsyncMicros)
	}

	// A test the run did not select has no rows and no section.
	section := func(title, header string, test string, cells func(r Row) string) {
		if !slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.Test == test }) {
			return
		}
		fmt.Fprintf(&b, "\n%s\n", title)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, header)
		for _, r := range rep.Rows {
			if r.Test != test {
				continue
			}
			fmt.Fprintln(tw, cells(r))
		}
		tw.Flush()
	}
	// A system that did not start says why once, below the table; a test
	// that does not apply to a system is a short mark.
	status := func(r Row) string {
		switch {
		case strings.HasPrefix(r.Status, "not started"):
			return "not started (see below)"
		case strings.HasPrefix(r.Status, "not applicable"):
			return "n/a"
		}
		return r.Status
	}
	ratio := func(r Row) string {
		if r.Ratio == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", r.Ratio)
	}
	figures := func(r Row, f string) string {
		if !r.OK() {
			return "-"
		}
		return f
	}

	section("PRODUCER: one producer, until the broker holds every message (×trib: msg/s)",
		"batch\tacks\tsystem\tmessages\tmsg/s\tMB/s\t×trib\tdisk B/msg over payload\t  status", TestProduce,
		func(r Row) string {
			over := "-"
			if r.OverheadBytes != nil {
				over = fmt.Sprintf("%.1f", *r.OverheadBytes)
			}
			return fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t  %s", r.Batch, r.Acks, r.System,
				figures(r, fmt.Sprint(r.Messages)), figures(r, fmt.Sprintf("%.0f", r.MsgsPerSec)),
				figures(r, fmt.Sprintf("%.1f", r.MBPerSec)), ratio(r), over, status(r))
		})
	section("CONSUMER: one consumer, ~200 KB / 1000 messages per fetch, batch-50 acks=1 data, in page cache (×trib: msg/s)",
		"system\tmessages\tmsg/s\tMB/s\t×trib\t  status", TestConsume,
		func(r Row) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t  %s", r.System, figures(r, fmt.Sprint(r.Messages)),
				figures(r, fmt.Sprintf("%.0f", r.MsgsPerSec)), figures(r, fmt.Sprintf("%.1f", r.MBPerSec)), ratio(r), status(r))
		})
	section("LATENCY: produce (acks=1, batch 1) to consume at a fixed rate (×trib: p50; >1 is slower)",
		"system\tmessages\tp50 ms\tp99 ms\t×trib\t  status", TestLatency,
		func(r Row) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t  %s", r.System, figures(r, fmt.Sprint(r.Messages)),
				figures(r, fmt.Sprintf("%.2f", r.P50Ms)), figures(r, fmt.Sprintf("%.2f", r.P99Ms)), ratio(r), status(r))
		})
	section(fmt.Sprintf("REPLICATED: one producer, acks=all, idempotent, into one partition of RF 3 (min.insync.replicas=%d) and of RF 1, same cluster (×trib: msg/s; rf3/rf1: msg/s of RF 3 over RF 1)", replicatedMinISR),
		"batch\tRF\tsystem\tmessages\tmsg/s\tMB/s\t×trib\trf3/rf1\t  status", TestReplicated,
		func(r Row) string {
			rf := "-"
			if r.ReplicationRatio != 0 {
				rf = fmt.Sprintf("%.2f", r.ReplicationRatio)
			}
			return fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t  %s", r.Batch, r.Replicas, r.System,
				figures(r, fmt.Sprint(r.Messages)), figures(r, fmt.Sprintf("%.0f", r.MsgsPerSec)),
				figures(r, fmt.Sprintf("%.1f", r.MBPerSec)), ratio(r), rf, status(r))
		})
	capacityCells := func(r Row) string {
		acks, client := fmt.Sprint(r.Acks), "wire"
		if r.Acks == AcksAll {
			acks = "all"
		}
		if r.Test == TestCapacityKgo {
			client = "kgo"
		}
		inverse, disk, cpu := "-", "-", "-"
		if r.CPUMicrosPerMsg > 0 {
			cpu = fmt.Sprintf("%.2f", r.CPUMicrosPerMsg)
		}
		if r.Ratio > 0 {
			inverse = fmt.Sprintf("%.2fx", 1/r.Ratio)
		}
		if r.DiskFraction > 0 {
			disk = fmt.Sprintf("%.0f%%", 100*r.DiskFraction)
		}
		var rounds []string
		for _, f := range r.Rounds {
			rounds = append(rounds, fmt.Sprintf("%.0f", f))
		}
		if strings.HasPrefix(r.Status, "not ") {
			rounds = []string{"-"}
		}
		return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t  %s\t  %s", client, r.Connections, acks, r.System,
			figures(r, fmt.Sprintf("%.0f", r.MsgsPerSec)), figures(r, fmt.Sprintf("%.1f", r.MBPerSec)), ratio(r), inverse, disk, cpu,
			figures(r, fmt.Sprint(r.Messages)), strings.Join(rounds, " "), status(r))
	}
	capacityHeader := "client\tconns\tacks\tsystem\tmsg/s\tMB/s\t×trib\ttrib÷\tof disk\tcpu µs/msg\tmessages\t  rounds msg/s\t  status"
	section(fmt.Sprintf("CAPACITY: batch %d, %d-byte records, median of each system's rounds, each round a fresh start, systems alternating; "+
		"wire = pre-encoded Produce requests pipelined (%d in flight per connection) into %d partitions; only acknowledged records count "+
		"(×trib: msg/s over Tributary's; trib÷: Tributary's over this; of disk: payload MB/s over the disk's sequential write MB/s; "+
		"cpu µs/msg: the broker process's CPU time per acknowledged message, of the median round)",
		capacityBatch, MessageSize, capacityInFlight, capacityPartitions),
		capacityHeader, TestCapacity, capacityCells)
	section("CAPACITY, ONE KGO PRODUCER: one request of one batch at a time, until the broker holds every record; acks=all idempotent",
		capacityHeader, TestCapacityKgo, capacityCells)
	section("MEMORY: peak RSS (VmHWM) of the broker process over all its tests, summed over a cluster's processes (×trib: RSS)",
		"system\tpeak RSS MB\t×trib\t  status", TestMemory,
		func(r Row) string {
			return fmt.Sprintf("%s\t%s\t%s\t  %s", r.System, figures(r, fmt.Sprintf("%.0f", r.PeakRSSMB)), ratio(r), status(r))
		})

	fmt.Fprintf(&b, "\nHow each system ran (durability, and what batch and acks mean for it):\n")
	for _, s := range rep.systems() {
		fmt.Fprintf(&b, "  %s: %s\n", s, rep.Notes[s])
		if why := rep.notStarted(s); why != "" {
			fmt.Fprintf(&b, "    NOT STARTED: %s\n", why)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// systems are the systems of the rows, in order of first appearance.
func (rep *Report) systems() []string {
	var out []string
	for _, r := range rep.Rows {
		if !slices.Contains(out, r.System) {
			out = append(out, r.System)
		}
	}
	return out
}

// notStarted is why system did not start, or "" if it did (or had nothing
// to run).
func (rep *Report) notStarted(system string) string {
	for _, r := range rep.Rows {
		if r.System == system {
			if why, ok := strings.CutPrefix(r.Status, "not started: "); ok {
				return why
			}
		}
	}
	return ""
}

// WriteFiles writes bench.txt, bench.json and bench.svg into dir.
func (rep *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(io.Writer) error{
		"bench.txt":  rep.WriteTable,
		"bench.json": rep.WriteJSON,
		"bench.svg":  rep.WriteSVG,
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
