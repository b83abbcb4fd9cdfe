package main

import (
	"runtime"
	"testing"
)

func TestBrokerRunsWithMoreProcsThanCores(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(3)
	raiseProcsForBlockingIO()
	if got := runtime.GOMAXPROCS(0); got != 6 {
		t.Errorf("GOMAXPROCS from 3: got %d, want 6", got)
	}
	runtime.GOMAXPROCS(40)
	raiseProcsForBlockingIO()
	if got := runtime.GOMAXPROCS(0); got != 40+extraProcs {
		t.Errorf("GOMAXPROCS from 40: got %d, want %d", got, 40+extraProcs)
	}
}

func TestOperatorsGOMAXPROCSIsLeftAlone(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3)
	raiseProcsForBlockingIO()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS=3 in the environment: got %d, want it left at 3", got)
	}
}
