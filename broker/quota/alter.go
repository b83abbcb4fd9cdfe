package quota

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// What DescribeClientQuotas and AlterClientQuotas (broker/securityapi)
// ask of the model: matching a filter, checking and applying changes.

// Matches applies DescribeClientQuotas' filter: every component
// must match e's part of its type; strict also refuses entities with types
// the filter does not name.
func Matches(e Entity, comps []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	named := 0
	for _, c := range comps {
		p := e.user
		if c.EntityType == EntityClientID {
			p = e.client
		}
		if !p.set {
			return false
		}
		named++
		switch c.MatchType {
		case 0: // EXACT; a null name is the default
			if c.Match == nil {
				if !p.def {
					return false
				}
			} else if p.def || p.name != *c.Match {
				return false
			}
		case 1: // DEFAULT
			if !p.def {
				return false
			}
		}
	}
	parts := 0
	if e.user.set {
		parts++
	}
	if e.client.set {
		parts++
	}
	return !strict || parts == named
}

// CheckOps refuses keys Tributary does not enforce and rates that are
// not whole, positive byte counts.
func CheckOps(ops []kmsg.AlterClientQuotasRequestEntryOp) error {
	for _, op := range ops {
		if err := checkQuota(op.Key, op.Value, op.Remove); err != nil {
			return err
		}
	}
	return nil
}

// checkQuota refuses a key Tributary does not enforce and, unless the
// quota is being removed, a rate that is not a whole, positive byte count.
// Stored quotas (quotas.json, the ZooKeeper node) are held to the same
// rules when read, so a damaged store cannot give a zero, negative or NaN
// rate to the throttle arithmetic.
func checkQuota(key string, rate float64, removing bool) error {
	if key != ProducerByteRate && key != ConsumerByteRate {
		return fmt.Errorf("quota %q is not served: Tributary enforces %s and %s", key, ProducerByteRate, ConsumerByteRate)
	}
	if !removing && (rate < 1 || rate != math.Trunc(rate) || rate > math.MaxInt64) {
		return fmt.Errorf("%s=%v: a rate must be a whole number of bytes per second, at least 1", key, rate)
	}
	return nil
}

func applyOps(t Table, e Entity, ops []kmsg.AlterClientQuotasRequestEntryOp) {
	v := t[e]
	if v == nil {
		v = Values{}
	}
	for _, op := range ops {
		if op.Remove {
			delete(v, op.Key)
		} else {
			v[op.Key] = op.Value
		}
	}
	if len(v) == 0 {
		delete(t, e)
	} else {
		t[e] = v
	}
}
