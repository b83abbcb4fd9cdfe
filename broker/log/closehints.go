package log

import (
	"os"
	"path/filepath"
)

// What Close writes after its last flush, besides the recovery checkpoint:
// the producer snapshot at the log end and the clean-shutdown marker. Both
// only spare the next Open work (the marker lets it trust the segments
// instead of scanning them; the snapshot spares it reading batch headers
// to rebuild the producers), and Close writes them once everything they
// describe is durable: the data and the aborted-transaction entries by the
// last flush (or by the flushes before a release), the indexes by the seals
// (or the release), which come before the marker. So neither needs an
// fsync of its own. A power loss that takes the marker leaves a log that
// the next Open scans from its checkpoint as after a crash; one that takes
// or tears the snapshot leaves the one before it, or none (a snapshot is
// framed with a CRC, and a damaged one is ignored and deleted), and Open
// reads the headers after that. No power loss can make either claim more
// than what is on disk.
//
// Written with fsyncs (a file and its directory each), they cost four per
// partition, the only fsyncs of closing an idle, released log: a broker
// with 10,000 partitions took 5.5-13.3 s to shut down cleanly, almost all
// of it in those fsyncs.

// writeUnsynced replaces dir/name with data through a temporary file
// renamed over it, so a crash of the process leaves the old or the new
// content, and fsyncs nothing, so a power loss may leave either, or a torn
// or missing file. Only for files their reader checks (CRC, parse) and can
// do without.
func writeUnsynced(fsys FS, dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	tmp := path + ".tmp" // Open removes the *.tmp a crash leaves (listSegments)
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		fsys.Remove(tmp)
	}
	return err
}

// markCleanShutdown creates the clean-shutdown marker, unsynced. Only its
// presence counts (recovery.go stats it), and an empty file created in
// one call is either there or not: no temporary file is needed.
func markCleanShutdown(fsys FS, dir string) error {
	f, err := fsys.OpenFile(filepath.Join(dir, cleanMarkerFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
