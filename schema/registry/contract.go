package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Data contracts, as Confluent has them: a schema may carry metadata (tags
// on its fields, properties, the names of sensitive fields) and a rule set
// (migration, domain and encoding rules). The registry checks their shape,
// stores them with the schema in its SCHEMA record, returns them, and
// counts them in the schema's identity: the same text with another
// contract is another schema, with another id, as in Confluent. A
// registration that brings no contract keeps the one of the subject's
// latest version. Rules are stored, never executed: running them (CEL
// conditions, field encryption, migrations) is the clients' work.
//
// A subject's compatibility group (the compatibilityGroup of its config)
// names a metadata property: a new version is then checked only against
// the versions whose value of that property is the same as its own, so a
// "major version" property starts a new line of evolution.

// contract is a schema's metadata and rule set, normalized: Confluent
// sorts tags, properties and sensitive names, and fills a rule's kind and
// mode with their defaults, so that equal contracts compare equal.
type contract struct {
	Metadata *metadata `json:"metadata,omitempty"`
	RuleSet  *ruleSet  `json:"ruleSet,omitempty"`
}

type metadata struct {
	Tags       map[string][]string `json:"tags,omitempty"`
	Properties map[string]string   `json:"properties,omitempty"`
	Sensitive  []string            `json:"sensitive,omitempty"`
}

type ruleSet struct {
	MigrationRules []rule `json:"migrationRules,omitempty"`
	DomainRules    []rule `json:"domainRules,omitempty"`
	EncodingRules  []rule `json:"encodingRules,omitempty"`
	EnableAt       string `json:"enableAt,omitempty"`
}

type rule struct {
	Name      string            `json:"name"`
	Doc       string            `json:"doc,omitempty"`
	Kind      string            `json:"kind"`
	Mode      string            `json:"mode"`
	Type      string            `json:"type"`
	Tags      []string          `json:"tags,omitempty"`
	Params    map[string]string `json:"params,omitempty"`
	Expr      string            `json:"expr,omitempty"`
	OnSuccess string            `json:"onSuccess,omitempty"`
	OnFailure string            `json:"onFailure,omitempty"`
	Disabled  bool              `json:"disabled,omitempty"`
}

// ruleNameMax is Confluent's bound on a rule's name.
const ruleNameMax = 256

// decodeContract checks and normalizes a request's or record's metadata
// and rule set; nil when neither is given. The error says what is wrong,
// and whether it is the metadata (42201) or the rule set (42210). A
// request's fields this registry does not know are refused (strict); a
// record's are ignored, so that a version a newer Confluent wrote is not
// lost on replay.
func decodeContract(rawMeta, rawRules json.RawMessage, strict bool) (*contract, *apiError) {
	unmarshal := json.Unmarshal
	if strict {
		unmarshal = strictJSON
	}
	var c contract
	if !isJSONNull(rawMeta) {
		var m metadata
		if err := unmarshal(rawMeta, &m); err != nil {
			return nil, errInvalidSchema("metadata is not an object {\"tags\", \"properties\", \"sensitive\"}: %v", err)
		}
		for k, v := range m.Tags {
			slices.Sort(v)
			m.Tags[k] = slices.Compact(v)
		}
		slices.Sort(m.Sensitive)
		m.Sensitive = slices.Compact(m.Sensitive)
		if len(m.Tags) > 0 || len(m.Properties) > 0 || len(m.Sensitive) > 0 {
			c.Metadata = &m
		}
	}
	if !isJSONNull(rawRules) {
		var rs ruleSet
		if err := unmarshal(rawRules, &rs); err != nil {
			return nil, errInvalidRuleSet("the rule set is not an object {\"migrationRules\", \"domainRules\", \"encodingRules\"}: %v", err)
		}
		if err := rs.normalize(); err != nil {
			return nil, errInvalidRuleSet("%v", err)
		}
		if len(rs.MigrationRules)+len(rs.DomainRules)+len(rs.EncodingRules) > 0 || rs.EnableAt != "" {
			c.RuleSet = &rs
		}
	}
	if c.Metadata == nil && c.RuleSet == nil {
		return nil, nil
	}
	return &c, nil
}

// strictJSON decodes raw into v, refusing fields v does not have: what the
// registry cannot store is refused, never dropped.
func strictJSON(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func (rs *ruleSet) normalize() error {
	names := map[string]bool{}
	for _, phase := range []struct {
		name  string
		rules []rule
		modes []string
	}{
		{"migration", rs.MigrationRules, []string{"UPGRADE", "DOWNGRADE", "UPDOWN"}},
		{"domain", rs.DomainRules, []string{"WRITE", "READ", "WRITEREAD"}},
		{"encoding", rs.EncodingRules, []string{"WRITE", "READ", "WRITEREAD"}},
	} {
		for i := range phase.rules {
			r := &phase.rules[i]
			if err := r.normalize(); err != nil {
				return err
			}
			if names[r.Name] {
				return fmt.Errorf("rule name %q is used twice", r.Name)
			}
			names[r.Name] = true
			if !slices.Contains(phase.modes, r.Mode) {
				return fmt.Errorf("rule %q: %s rules can only be %s, not %s", r.Name, phase.name, strings.Join(phase.modes, ", "), r.Mode)
			}
		}
	}
	switch rs.EnableAt = strings.ToUpper(rs.EnableAt); rs.EnableAt {
	case "", "ALL", "CLIENT", "GATEWAY", "SERVER", "NONE":
	default:
		return fmt.Errorf("enableAt %q is not one of ALL, CLIENT, GATEWAY, SERVER, NONE", rs.EnableAt)
	}
	return nil
}

func (r *rule) normalize() error {
	switch {
	case r.Name == "":
		return fmt.Errorf("a rule has no name")
	case len(r.Name) > ruleNameMax:
		return fmt.Errorf("rule name %.20q... is longer than %d characters", r.Name, ruleNameMax)
	case !validRuleName(r.Name):
		return fmt.Errorf("rule name %q: a name starts with a letter or _ and holds letters, digits, _ and - only", r.Name)
	case r.Type == "":
		return fmt.Errorf("rule %q has no type", r.Name)
	}
	if r.Kind = strings.ToUpper(r.Kind); r.Kind == "" {
		r.Kind = "TRANSFORM"
	}
	if r.Kind != "TRANSFORM" && r.Kind != "CONDITION" {
		return fmt.Errorf("rule %q: kind %q is not TRANSFORM or CONDITION", r.Name, r.Kind)
	}
	if r.Mode = strings.ToUpper(r.Mode); r.Mode == "" {
		r.Mode = "WRITEREAD"
	}
	if r.Mode != "WRITEREAD" && r.Mode != "UPDOWN" && (strings.Contains(r.OnSuccess, ",") || strings.Contains(r.OnFailure, ",")) {
		return fmt.Errorf("rule %q: a pair of actions (\"a,b\") is for WRITEREAD and UPDOWN rules only", r.Name)
	}
	slices.Sort(r.Tags)
	r.Tags = slices.Compact(r.Tags)
	return nil
}

func validRuleName(s string) bool {
	for i, c := range s {
		ok := unicode.IsLetter(c) || c == '_' || (i > 0 && (unicode.IsDigit(c) || c == '-'))
		if !ok {
			return false
		}
	}
	return true
}

// key is what a contract adds to a schema's key; "" for none. Maps
// marshal with sorted keys, so equal contracts give equal keys.
func (c *contract) key() string {
	if c == nil {
		return ""
	}
	return "\x00contract:" + string(mustJSON(c))
}

// property returns a metadata property, or "" (none).
func (c *contract) property(name string) (string, bool) {
	if c == nil || c.Metadata == nil {
		return "", false
	}
	v, ok := c.Metadata.Properties[name]
	return v, ok
}

// withContract returns d with c as its contract, and c in its key.
func (d *schemaDoc) withContract(c *contract) *schemaDoc {
	if c == nil && d.contract == nil {
		return d
	}
	out := *d
	out.Key = strings.TrimSuffix(d.Key, d.contract.key()) + c.key()
	out.contract = c
	return &out
}

func (c *contract) metadataOrNil() *metadata {
	if c == nil {
		return nil
	}
	return c.Metadata
}

func (c *contract) ruleSetOrNil() *ruleSet {
	if c == nil {
		return nil
	}
	return c.RuleSet
}

// latestContract returns the contract of a subject's latest live version,
// which a registration without one of its own keeps.
func (st *state) latestContract(subject string) *contract {
	prev := st.previous(subject)
	if len(prev) == 0 {
		return nil
	}
	return prev[len(prev)-1].schema.contract
}

// inGroup keeps of prev the versions in sch's compatibility group: those
// whose value of the subject's group property is sch's (both may lack it).
func (st *state) inGroup(subject string, sch *schemaDoc, prev []previous) []previous {
	group := st.group(subject)
	if group == "" {
		return prev
	}
	want, has := sch.contract.property(group)
	var out []previous
	for _, p := range prev {
		if v, ok := p.schema.contract.property(group); v == want && ok == has {
			out = append(out, p)
		}
	}
	return out
}

// group returns the compatibility group of a subject: its own, else the
// global one, else none.
func (st *state) group(subject string) string {
	if g, ok := st.groups[subject]; ok {
		return g
	}
	return st.groups[""]
}
