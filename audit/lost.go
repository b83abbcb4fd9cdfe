package audit

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// lostEvents finds the gaps in every publisher's sequence numbers, between
// the first and the last event seen (the store may have started reading
// after a publisher's first events). A gap is located through the
// Previous list of a later event. It returns the lost events and, for each
// located one that falls in the report, a note per (tier, topic, window)
// whose counts it makes incomplete.
func (s *Store) lostEvents(o Options) ([]LostEvent, map[cellKey]string) {
	var lost []LostEvent
	marks := map[cellKey]string{}
	for id, p := range s.pubs {
		if !o.wantTier(p.tier) {
			continue
		}
		lo, hi := int64(-1), int64(-1)
		for seq := range p.seqs {
			if lo < 0 || seq < lo {
				lo = seq
			}
			hi = max(hi, seq)
		}
		for seq := lo + 1; seq < hi; seq++ {
			if _, ok := p.seqs[seq]; ok {
				continue
			}
			le := LostEvent{Tier: p.tier, Publisher: id, Sequence: seq}
			var size time.Duration
			for later := seq + 1; later <= seq+maxPrevious && !le.Located; later++ {
				info, ok := p.seqs[later]
				if !ok {
					continue
				}
				for _, pr := range info.previous {
					if pr.Sequence == seq {
						le.Located, le.Window, le.Topics, size = true, pr.Window, pr.Topics, info.size
						break
					}
				}
			}
			if le.Located {
				rw, ok := o.place(le.Window, size)
				if !ok {
					continue // outside the report
				}
				note := fmt.Sprintf("monitoring event %d of %s (tier %s) was lost: counts are incomplete", seq, id, p.tier)
				for _, t := range le.Topics {
					if o.wantTopic(t) {
						marks[cellKey{p.tier, t, rw}] = note
					}
				}
			}
			lost = append(lost, le)
		}
	}
	slices.SortFunc(lost, func(a, b LostEvent) int {
		return cmp.Or(cmp.Compare(a.Tier, b.Tier), cmp.Compare(a.Publisher, b.Publisher), cmp.Compare(a.Sequence, b.Sequence))
	})
	return lost, marks
}

// producerIncomplete marks the windows whose baseline counts are known to
// be short: a baseline publisher (a producer) that stopped without a final
// event had counted, and not published, the events of the window current
// at its last event and possibly of the next one (a running publisher
// publishes a window once it closes). Other tiers may hold those events,
// which would read as excess, and a loss there would be hidden: such rows
// are shown as producer-incomplete and never judged.
func (s *Store) producerIncomplete(o Options) map[cellKey]string {
	marks := map[cellKey]string{}
	for id, p := range s.pubs {
		if p.final || p.tier != o.Baseline || p.lastSize <= 0 {
			continue
		}
		if !p.last.Before(o.Now.Add(-o.Grace - o.Window)) {
			continue // may still be running
		}
		note := fmt.Sprintf("producer %s stopped without publishing its last counts (after event %d at %s): producer counts incomplete, not judged",
			id, p.lastSeq, p.last.Format(time.RFC3339))
		w0 := WindowStart(p.last, p.lastSize)
		for _, w := range []time.Time{w0, w0.Add(p.lastSize)} {
			rw, ok := o.place(w, p.lastSize)
			if !ok {
				continue
			}
			for t := range p.topics {
				if o.wantTopic(t) {
					marks[cellKey{o.Baseline, t, rw}] = note
				}
			}
		}
	}
	return marks
}

// publisherNotes names publishers that stopped without a final event:
// whatever they had counted but not yet published is gone, so a tier may
// show excess (a producer's counts lost) or loss (a tier's counts lost)
// around that time. A running publisher announces every closed window,
// so one silent for longer than the grace period has stopped.
func (s *Store) publisherNotes(o Options) []string {
	var notes []string
	for id, p := range s.pubs {
		if p.final || !o.wantTier(p.tier) {
			continue
		}
		if (!o.From.IsZero() && p.last.Before(o.From)) || !p.last.Before(o.Now.Add(-o.Grace-o.Window)) {
			continue
		}
		notes = append(notes, fmt.Sprintf("publisher %s (tier %s) stopped without a final monitoring event after event %d at %s: what it counted after that was lost",
			id, p.tier, p.lastSeq, p.last.Format(time.RFC3339)))
	}
	slices.Sort(notes)
	return notes
}
