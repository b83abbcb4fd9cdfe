package bench

// The broker's CPU per message. On a machine shared with other work, a
// row's msg/s moves with the load of everything else (rounds of one system
// were seen 3× apart), but the CPU time the broker process itself spends
// per acknowledged message moves far less: it is the figure to compare
// builds by when the broker is CPU-bound, as it is at batch 50.

// cpuMeter measures the CPU (user and system, all threads) the processes
// use between startCPU and stop, read from /proc (cpuSeconds); a process
// it cannot read leaves the figure out (0), never fails a row.
type cpuMeter struct {
	pids  []int
	begin float64
	ok    bool
}

func startCPU(pids []int) *cpuMeter {
	m := &cpuMeter{pids: pids}
	m.begin, m.ok = sumCPU(pids)
	return m
}

// stop returns the CPU seconds used since startCPU, or 0 if unknown.
func (m *cpuMeter) stop() float64 {
	if !m.ok {
		return 0
	}
	s, ok := sumCPU(m.pids)
	if !ok || s < m.begin {
		return 0
	}
	return s - m.begin
}

func sumCPU(pids []int) (float64, bool) {
	var total float64
	for _, pid := range pids {
		s, err := cpuSeconds(pid)
		if err != nil {
			return 0, false
		}
		total += s
	}
	return total, len(pids) > 0
}
