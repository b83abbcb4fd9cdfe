package registry

import (
	"context"
	"fmt"
	"slices"
)

// Every write follows the same steps: read the log to its end, decide
// against that state, append, and wait until the node has applied its own
// record. Only registration can lose a race that matters (two nodes
// claiming one version slot or one new id); it checks the outcome and
// decides again.

// maxRegisterAttempts bounds how often a registration retries after losing
// a race to another node. Each loss means another registration succeeded,
// so running out needs a sustained storm of writes to one subject.
const maxRegisterAttempts = 10

// append writes recs and waits until this node has applied them.
func (s *Server) append(ctx context.Context, op string, recs ...Record) *apiError {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SyncTimeout)
	defer cancel()
	last, err := s.log.Append(ctx, recs...)
	if err != nil {
		return storeErr(op, err)
	}
	if err := s.waitFor(ctx, last+1); err != nil {
		return storeErr(op, err)
	}
	return nil
}

// sync prepares a write: it refuses it while writes are refused, catches
// up, and checks that the topic is the one the node has been reading
// (checkpoint.go).
func (s *Server) sync(ctx context.Context, op string) *apiError {
	if err := s.writesRefused(); err != nil {
		return err
	}
	if err := s.catchUp(ctx); err != nil {
		return storeErr(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SyncTimeout)
	defer cancel()
	return s.checkTopic(ctx)
}

// register registers sch under subject and returns its id: the id the
// subject already has for it, else the id the schema has under any
// subject, else a new one.
//
// The compatibility check runs outside the state's lock (it may take up
// to CheckTimeout), so the plan is made again after it: if the subject's
// level or live versions changed meanwhile, the check is repeated.
//
// imp carries the id and version a registration asks for, which only
// IMPORT mode grants (zero: none asked for).
func (s *Server) register(ctx context.Context, subject string, sch *schemaDoc, refs []schemaRef, imp imported) (int, *apiError) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var checked *regPlan
	for attempt := 1; ; attempt++ {
		if attempt > 2*maxRegisterAttempts { // a check and a write per attempt
			return 0, storeErr("Register", fmt.Errorf("lost %d races in a row to other registry nodes writing subject %q", maxRegisterAttempts, subject))
		}
		if err := s.sync(ctx, "Register"); err != nil {
			return 0, err
		}
		s.mu.RLock()
		p, aerr := s.st.planRegister(subject, sch, s.cfg.DefaultCompatibility, imp)
		s.mu.RUnlock()
		if aerr != nil || p.num == 0 {
			return p.id, aerr
		}
		if !p.imported && (checked == nil || !p.sameCheck(checked)) {
			msgs, aerr := s.checkWithin(ctx, p.level, p.sch, p.prev)
			if aerr != nil {
				return 0, aerr
			}
			if len(msgs) > 0 {
				return 0, errIncompatible(subject, msgs)
			}
			checked = &p
			continue // plan again: the state may have moved during the check
		}
		// The id goes into the checkpoint before any record hands it out.
		if err := s.saveCheckpoint(p.id); err != nil {
			return 0, errStore("Register", err)
		}
		recs := []Record{versionRecord(subject, p.num, p.id, p.sch, refs, false)}
		if c := contextOf(subject); c != "" {
			s.mu.RLock()
			fresh := !slices.Contains(s.st.contexts(), c)
			s.mu.RUnlock()
			if fresh { // a Confluent node reading the topic learns of the context
				recs = append([]Record{contextRecord(c)}, recs...)
			}
		}
		if err := s.append(ctx, "Register", recs...); err != nil {
			return 0, err
		}
		s.mu.RLock()
		won := false
		if sub := s.st.subjects[subject]; sub != nil {
			v := sub.find(p.num)
			won = v != nil && v.id == p.id && !v.deleted && s.st.schemaOf(subject, v).schema.Key == p.sch.Key
		}
		s.mu.RUnlock()
		if won {
			s.cfg.Logger.Info("schema registered", "subject", subject, "version", p.num, "id", p.id, "imported", p.imported)
			return p.id, nil
		}
	}
}

// imported is the id and version a registration asks for (IMPORT mode).
type imported struct{ id, version int }

// regPlan is a registration decided against one state: the id and version
// to write, or version 0 when the subject already has the schema under id;
// and what the schema must be compatible with before it is written.
type regPlan struct {
	sch      *schemaDoc // what is registered: the request's schema, with a contract kept
	id, num  int
	level    string
	prev     []previous
	imported bool // IMPORT mode: no compatibility check
}

// sameCheck reports whether p needs the same compatibility check as q.
func (p *regPlan) sameCheck(q *regPlan) bool {
	return p.level == q.level && slices.EqualFunc(p.prev, q.prev, func(a, b previous) bool {
		return a.version == b.version && a.schema == b.schema
	})
}

// planRegister plans a registration against the current state; the
// compatibility check is left to the caller.
func (st *state) planRegister(subject string, sch *schemaDoc, dflt string, imp imported) (regPlan, *apiError) {
	if aerr := st.writable(subject); aerr != nil {
		return regPlan{}, aerr
	}
	if st.mode(subject) == modeImport {
		p, aerr := st.planImport(subject, sch, imp)
		p.sch = sch
		return p, aerr
	}
	if imp.id > 0 || imp.version > 0 {
		return regPlan{}, errNotPermitted(fmt.Sprintf("Subject %s is not in import mode: a registration may carry its id and version only in IMPORT mode (PUT /mode {\"mode\": \"IMPORT\"}); leave both out", subject))
	}
	if sch.contract == nil {
		sch = sch.withContract(st.latestContract(subject)) // as Confluent: a contract stays until replaced
	}
	sub := st.subjects[subject]
	if sub != nil {
		for i := len(sub.versions) - 1; i >= 0; i-- {
			v := sub.versions[i]
			if !v.deleted && st.schemaOf(subject, v).schema.Key == sch.Key {
				return regPlan{id: v.id, sch: sch}, nil
			}
		}
	}
	p := regPlan{sch: sch, level: st.level(subject, dflt), prev: st.inGroup(subject, sch, st.previous(subject)), num: 1}
	id, ok := st.spaceFor(subject).byKey[sch.Key]
	if !ok {
		if id = st.nextIDIn(contextOf(subject)); id > maxID31 {
			return regPlan{}, errStore("Register", fmt.Errorf("every schema id up to 2^31-1 is used; the 4-byte envelope cannot carry a larger one"))
		}
	}
	p.id = id
	if sub != nil {
		p.num = sub.latest(true) + 1
	}
	return p, nil
}

// deleteVersion soft-deletes a version, or hard-deletes a soft-deleted one.
func (s *Server) deleteVersion(ctx context.Context, subject string, ref versionRef, permanent bool) (int, *apiError) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.sync(ctx, "Delete schema version"); err != nil {
		return 0, err
	}
	s.mu.RLock()
	rec, num, aerr := s.st.planDeleteVersion(subject, ref, permanent)
	s.mu.RUnlock()
	if aerr != nil {
		return 0, aerr
	}
	if err := s.append(ctx, "Delete schema version", rec); err != nil {
		return 0, err
	}
	s.cfg.Logger.Info("schema version deleted", "subject", subject, "version", num, "permanent", permanent)
	return num, nil
}

func (st *state) planDeleteVersion(subject string, ref versionRef, permanent bool) (Record, int, *apiError) {
	if aerr := st.writable(subject); aerr != nil {
		return Record{}, 0, aerr
	}
	sub := st.subjects[subject]
	if sub == nil {
		return Record{}, 0, errSubjectNotFound(subject)
	}
	num := ref.num
	if ref.latest {
		// A permanent delete follows a soft one, so "latest" there means
		// the latest version including soft-deleted ones.
		if num = sub.latest(permanent); num == 0 {
			return Record{}, 0, errSubjectNotFound(subject)
		}
	}
	v := sub.find(num)
	switch {
	case v == nil:
		return Record{}, 0, errVersionNotFound(num)
	case permanent && !v.deleted:
		return Record{}, 0, errVersionNotSoftDeleted(subject, num)
	case v.deleted && !permanent:
		return Record{}, 0, errVersionSoftDeleted(subject, num)
	}
	if aerr := st.notReferenced(subject, num); aerr != nil {
		return Record{}, 0, aerr
	}
	if permanent {
		return tombstoneRecord(subject, num), num, nil
	}
	sch := st.schemaOf(subject, v)
	return versionRecord(subject, num, v.id, sch.schema, sch.refs, true), num, nil
}

// deleteSubject soft-deletes every version of a subject, or hard-deletes a
// soft-deleted subject, and returns the versions it deleted.
func (s *Server) deleteSubject(ctx context.Context, subject string, permanent bool) ([]int, *apiError) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.sync(ctx, "Delete subject"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	recs, nums, aerr := s.st.planDeleteSubject(subject, permanent)
	s.mu.RUnlock()
	if aerr != nil {
		return nil, aerr
	}
	if err := s.append(ctx, "Delete subject", recs...); err != nil {
		return nil, err
	}
	s.cfg.Logger.Info("subject deleted", "subject", subject, "versions", nums, "permanent", permanent)
	return nums, nil
}

func (st *state) planDeleteSubject(subject string, permanent bool) ([]Record, []int, *apiError) {
	if aerr := st.writable(subject); aerr != nil {
		return nil, nil, aerr
	}
	sub := st.subjects[subject]
	if sub == nil {
		return nil, nil, errSubjectNotFound(subject)
	}
	for _, v := range sub.versions {
		if aerr := st.notReferenced(subject, v.num); aerr != nil {
			return nil, nil, aerr
		}
	}
	var nums []int
	if permanent {
		if sub.live() {
			return nil, nil, errSubjectNotSoftDeleted(subject)
		}
		// One tombstone per version, appended together; a crash between
		// them (they share a batch, so unlikely) leaves the rest
		// soft-deleted and the delete can simply be repeated.
		var recs []Record
		for _, v := range sub.versions {
			nums = append(nums, v.num)
			recs = append(recs, tombstoneRecord(subject, v.num))
		}
		return recs, nums, nil
	}
	if !sub.live() {
		return nil, nil, errSubjectSoftDeleted(subject)
	}
	for _, v := range sub.versions {
		if !v.deleted {
			nums = append(nums, v.num)
		}
	}
	return []Record{deleteSubjectRecord(subject, sub.latest(true))}, nums, nil
}

// setConfig updates (upd != nil) or resets the config of a subject, or
// the global one when subject is "": an update changes what it names and
// keeps the rest, as Confluent merges a PUT /config. It returns the level
// that was set before, or "".
func (s *Server) setConfig(ctx context.Context, subject string, upd *configUpdate) (string, *apiError) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.sync(ctx, "Update compatibility level"); err != nil {
		return "", err
	}
	s.mu.RLock()
	prev, group := s.st.configs[subject], s.st.groups[subject]
	s.mu.RUnlock()
	var v *configValue
	if upd != nil {
		v = &configValue{Level: prev, Group: group}
		if upd.level != nil {
			v.Level = *upd.level
		}
		if upd.group != nil {
			v.Group = *upd.group
		}
		if v.Level == "" && v.Group == "" {
			v = nil
		}
	} else if subject != "" && prev == "" && group == "" {
		return "", errSubjectNotFound(subject) // Confluent's answer to resetting a level never set
	}
	if err := s.append(ctx, "Update compatibility level", configValueRecord(subject, v)); err != nil {
		return "", err
	}
	s.cfg.Logger.Info("compatibility config changed", "subject", subject, "from", prev, "to", v)
	return prev, nil
}

// configUpdate is what a PUT /config changes; nil fields stay.
type configUpdate struct {
	level, group *string
}
