package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"
)

// ManyConfig sizes a many-partitions run (partitions.go).
type ManyConfig struct {
	Topics, Partitions int // per topic; 2,000 × 5 by default
	// TributaryBinary, Scripts and Logger as in Config; Systems is a
	// subset of "tributary", "tributary-nofile-100k" (the same under a
	// descriptor limit of 100,000, which needs the right to raise it) and
	// "kafka" (by default "tributary" and "kafka"); in the cluster half
	// (ManyCluster) of "tributary" and "kafka".
	TributaryBinary string
	TributaryArgs   []string
	Scripts         string
	Systems         []string
	WorkDir         string
	Logger          *slog.Logger
	// LogLevel is the cluster brokers' TRIBUTARY_LOG (default info): debug
	// logs each ISR change with its time, to see where a slow rejoin went.
	LogLevel string
	// KafkaHeap is each Kafka JVM's heap in the cluster half (default
	// peer.sh's 1G), and StepTimeout bounds each of its steps (default
	// stepTimeout): a step that runs out is reported as failed.
	KafkaHeap   string
	StepTimeout time.Duration
}

// ManyResult is one figure of one system: a duration in seconds, a share of
// a core, MiB or a count, or the reason it is missing.
type ManyResult struct {
	System, Measure string
	Value           float64
	Unit            string
	Status          string // "ok", or why there is no value
}

// restartable is a broker process the run can stop, kill and start again
// on the same data.
type restartable interface {
	start(ctx context.Context) (addr string, pid int, err error)
	stop(grace time.Duration) error // SIGTERM, then SIGKILL after grace
	kill() error                    // SIGKILL
	done() <-chan struct{}
}

// ManyPartitions runs the many-partitions measurements on each system.
func ManyPartitions(ctx context.Context, cfg ManyConfig) ([]ManyResult, error) {
	if cfg.Topics <= 0 {
		cfg.Topics = 2000
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 5
	}
	if len(cfg.Systems) == 0 {
		cfg.Systems = []string{"tributary", "kafka"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	work := cfg.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "tributary-many-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		work = d
	}
	var out []ManyResult
	for _, sys := range cfg.Systems {
		dir := filepath.Join(work, sys)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return out, err
		}
		var b restartable
		switch sys {
		case "tributary":
			b = &tributaryProc{bin: cfg.TributaryBinary, args: cfg.TributaryArgs, dir: dir}
		case "tributary-nofile-100k":
			// The same with a descriptor limit that holds every
			// partition open (prlimit execs the broker: same pid).
			b = &tributaryProc{bin: cfg.TributaryBinary, args: cfg.TributaryArgs, dir: dir, nofile: 100000}
		case "kafka":
			b = &kafkaProc{scripts: cfg.Scripts, dir: dir}
		default:
			return out, fmt.Errorf("many partitions: unknown system %q", sys)
		}
		out = append(out, manyOn(ctx, cfg, sys, b)...)
	}
	return out, nil
}

// manyOn runs every measurement on one system, always stopping it.
func manyOn(ctx context.Context, cfg ManyConfig, sys string, b restartable) []ManyResult {
	log := cfg.Logger.With("system", sys)
	var rows []ManyResult
	add := func(measure, unit string, v float64, err error) bool {
		r := ManyResult{System: sys, Measure: measure, Unit: unit, Value: v, Status: "ok"}
		if err != nil {
			r.Status, r.Value = "failed: "+oneLine(err.Error()), 0
		}
		log.Info("many partitions", "measure", measure, "value", v, "unit", unit, "status", r.Status)
		rows = append(rows, r)
		return err == nil
	}
	secs := func(d time.Duration) float64 { return d.Seconds() }
	step := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, stepTimeout) }

	addr, pid, err := b.start(ctx)
	if !add("start", "s", 0, err) {
		return rows
	}
	defer b.stop(time.Minute)
	c, cancel := step()
	d, err := createMany(c, addr, cfg.Topics, cfg.Partitions, 1)
	cancel()
	if !add("create", "s", secs(d), err) {
		return rows
	}
	c, cancel = step()
	d, err = produceAllInOne(c, addr, cfg.Topics, cfg.Partitions)
	cancel()
	add("acks=all, one request naming all", "s", secs(d), err)
	c, cancel = step()
	d, err = produceOneByOne(c, addr, cfg.Topics, cfg.Partitions)
	cancel()
	add("acks=all, one request per partition", "s", secs(d), err)
	measureIdle := func(when string) {
		time.Sleep(5 * time.Second) // let writes behind the answers settle
		share, err := idleCPU(pid, idleWindow)
		add("idle CPU "+when, "cores", share, err)
		rss, err := rssMiB(pid)
		add("RSS "+when, "MiB", rss, err)
		fds, err := openFiles(pid)
		add("open descriptors "+when, "", float64(fds), err)
	}
	measureIdle("after writing")

	restart := func(how string) {
		start := time.Now()
		addr, pid, err = b.start(ctx)
		if !add("restart after "+how+": listening", "s", secs(time.Since(start)), err) {
			return
		}
		c, cancel := step()
		adm, cl, err := adminFor(addr)
		if err == nil {
			err = waitLeaders(c, adm, cfg.Topics, cfg.Partitions, nil)
			cl.Close()
		}
		add("restart after "+how+": every leader in Metadata", "s", secs(time.Since(start)), err)
		_, err = produceAllInOne(c, addr, cfg.Topics, cfg.Partitions)
		cancel()
		add("restart after "+how+": acks=all naming all answered", "s", secs(time.Since(start)), err)
	}

	start := time.Now()
	err = b.stop(5 * time.Minute)
	add("clean shutdown", "s", secs(time.Since(start)), err)
	restart("a clean shutdown")
	measureIdle("after restart")
	err = b.kill()
	add("kill -9", "", 0, err)
	restart("kill -9")
	return rows
}

// WriteManyTable prints the results, one line per measure, the systems
// side by side.
func WriteManyTable(w io.Writer, rows []ManyResult) error {
	var systems, measures []string
	cell := map[[2]string]ManyResult{}
	for _, r := range rows {
		if _, ok := cell[[2]string{r.System, ""}]; !ok {
			cell[[2]string{r.System, ""}] = r
			systems = append(systems, r.System)
		}
		if _, seen := cell[[2]string{"", r.Measure}]; !seen {
			cell[[2]string{"", r.Measure}] = r
			measures = append(measures, r.Measure)
		}
		cell[[2]string{r.System, r.Measure}] = r
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "measure")
	for _, s := range systems {
		fmt.Fprintf(tw, "\t%s", s)
	}
	fmt.Fprintln(tw)
	for _, m := range measures {
		fmt.Fprint(tw, m)
		for _, s := range systems {
			r, ok := cell[[2]string{s, m}]
			switch {
			case !ok:
				fmt.Fprint(tw, "\t-")
			case r.Status != "ok":
				fmt.Fprintf(tw, "\t%s", r.Status)
			default:
				fmt.Fprintf(tw, "\t%.2f %s", r.Value, r.Unit)
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// tributaryProc is `tributary standalone` on a data directory kept across
// restarts.
type tributaryProc struct {
	bin    string
	args   []string
	dir    string
	nofile int // descriptor limit to run under (prlimit); 0: inherited
	addr   string
	p      *process
}

func (t *tributaryProc) start(ctx context.Context) (string, int, error) {
	if t.addr == "" {
		port, err := freePortRange(1)
		if err != nil {
			return "", 0, err
		}
		t.addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	data := filepath.Join(t.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", 0, err
	}
	args := append([]string{"standalone", "--data-dir", data, "--listen", t.addr, "--registry-listen="}, t.args...)
	bin := t.bin
	if t.nofile > 0 {
		args = append([]string{fmt.Sprintf("--nofile=%d:%d", t.nofile, t.nofile), bin}, args...)
		bin = "prlimit"
	}
	p, err := startProcess("tributary", filepath.Join(t.dir, fmt.Sprintf("tributary-%d.log", time.Now().UnixNano())),
		[]string{"TRIBUTARY_LOG=warn"}, bin, args...)
	if err != nil {
		return "", 0, err
	}
	t.p = p
	if err := waitListening(ctx, t.addr, p.done, stepTimeout); err != nil {
		p.stop(time.Second)
		return "", 0, p.failure(err)
	}
	return t.addr, p.pid(), nil
}

func (t *tributaryProc) stop(grace time.Duration) error {
	if t.p == nil {
		return nil
	}
	select {
	case <-t.p.done:
		return nil
	default:
	}
	return t.p.stop(grace)
}

func (t *tributaryProc) kill() error {
	if err := t.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-t.p.done
	return nil
}

func (t *tributaryProc) done() <-chan struct{} { return t.p.done }

// kafkaProc is Apache Kafka, one KRaft node, started by peer.sh on a data
// directory kept across restarts.
type kafkaProc struct {
	scripts string
	dir     string
	port    int
	pid     int
	exited  chan struct{}
}

func (k *kafkaProc) start(ctx context.Context) (string, int, error) {
	if k.port == 0 {
		port, err := freePortRange(3)
		if err != nil {
			return "", 0, err
		}
		k.port = port
	}
	srv, err := startPeerOn("kafka", 1, k.port)(ctx, Config{Scripts: k.scripts}, k.dir)
	if err != nil {
		return "", 0, err
	}
	k.pid = srv.pid
	k.exited = make(chan struct{})
	go func(pid int, exited chan struct{}) {
		for syscall.Kill(pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		close(exited)
	}(k.pid, k.exited)
	return srv.addr, srv.pid, nil
}

func (k *kafkaProc) stop(grace time.Duration) error {
	if k.pid == 0 {
		return nil
	}
	syscall.Kill(k.pid, syscall.SIGTERM)
	select {
	case <-k.exited:
		return nil
	case <-time.After(grace):
		syscall.Kill(k.pid, syscall.SIGKILL)
		<-k.exited
		return fmt.Errorf("kafka did not stop within %v of SIGTERM", grace)
	}
}

func (k *kafkaProc) kill() error {
	if err := syscall.Kill(k.pid, syscall.SIGKILL); err != nil {
		return err
	}
	<-k.exited
	return nil
}

func (k *kafkaProc) done() <-chan struct{} { return k.exited }
