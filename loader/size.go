package loader

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseBytes reads a size such as 134217728, 128MiB, 64MB, 512k or 1GiB
// (k, M, G: powers of 1000 with B, of 1024 with iB or alone).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"k", 1 << 10}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
		{"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: use a number of bytes, optionally with a unit (KiB, MiB, GiB, KB, MB, GB)", s)
	}
	return int64(n * float64(mult)), nil
}
