package main

import (
	"runtime"
	"testing"
)

func TestBrokerProcs(t *testing.T) {
	tests := []struct {
		name       string
		env        string // GOMAXPROCS in the environment
		from, want int
	}{
		{name: "doubled", from: 3, want: 6},
		{name: "at most extraProcs more", from: 40, want: 40 + extraProcs},
		{name: "the operator's choice left alone", env: "3", from: 3, want: 3},
	}
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tt.env)
			runtime.GOMAXPROCS(tt.from)
			raiseProcsForBlockingIO()
			if got := runtime.GOMAXPROCS(0); got != tt.want {
				t.Errorf("GOMAXPROCS from %d (environment %q): got %d, want %d", tt.from, tt.env, got, tt.want)
			}
		})
	}
}
