package broker

// DescribeUserScramCredentials and AlterUserScramCredentials: SCRAM users
// managed online, as kafka-configs and kadm do.
//
// Describe names each user's mechanisms and iteration counts, never a key.
// Alter takes a salted password computed by the client (the password never
// crosses the wire) and stores only the keys derived from it. A user named
// twice in one request gets DUPLICATE_RESOURCE for every mention, as in
// Kafka; an unknown mechanism UNSUPPORTED_SASL_MECHANISM; iterations
// outside 4096..16384 UNACCEPTABLE_CREDENTIAL; deleting what is not there
// RESOURCE_NOT_FOUND. Who may call them is the authorizer's decision.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
)

func init() {
	register(50, 0, 0, async((*Broker).describeUserSCRAMCredentials))
	register(51, 0, 0, async((*Broker).alterUserSCRAMCredentials))
}

// Kafka's numbering of the SCRAM mechanisms.
var scramMechanismCodes = map[int8]string{1: auth.MechSCRAM256, 2: auth.MechSCRAM512}

func scramMechanismCode(name string) int8 {
	for code, n := range scramMechanismCodes {
		if n == name {
			return code
		}
	}
	return 0
}

func (b *Broker) describeUserSCRAMCredentials(who *request, req *kmsg.DescribeUserSCRAMCredentialsRequest) *kmsg.DescribeUserSCRAMCredentialsResponse {
	if !b.mayCluster(who, kmsg.ACLOperationDescribe) {
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.ErrorCode = clusterRefused
		return resp
	}
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	all, err := b.cfg.Credentials.List()
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		return resp
	}
	byName := map[string]UserCredentials{}
	for _, u := range all {
		byName[u.User] = u
	}
	result := func(u UserCredentials) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u.User
		for _, m := range u.Mechanisms {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = scramMechanismCode(m.Mechanism), int32(m.Iterations)
			r.CredentialInfos = append(r.CredentialInfos, ci)
		}
		return r
	}
	if len(req.Users) == 0 {
		// Null or empty: every user, as Kafka answers; Java's
		// describeUserScramCredentials() sends an empty list
		// (kafka-configs --describe --entity-type users).
		for _, u := range all {
			resp.Results = append(resp.Results, result(u))
		}
		return resp
	}
	seen := map[string]int{}
	for _, u := range req.Users {
		seen[u.Name]++
	}
	for _, ru := range req.Users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = ru.Name
		u, ok := byName[ru.Name]
		switch {
		case seen[ru.Name] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
		case !ok:
			r.ErrorCode = kerr.ResourceNotFound.Code
			msg := fmt.Sprintf("attempt to describe a user credential that does not exist: %s", ru.Name)
			r.ErrorMessage = &msg
		default:
			r = result(u)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func (b *Broker) alterUserSCRAMCredentials(who *request, req *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	if !b.mayCluster(who, kmsg.ACLOperationAlter) {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		for _, d := range req.Deletions {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = d.Name, clusterRefused
			resp.Results = append(resp.Results, res)
		}
		for _, u := range req.Upsertions {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = u.Name, clusterRefused
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	mentions := map[string]int{}
	var order []string
	for _, d := range req.Deletions {
		if mentions[d.Name] == 0 {
			order = append(order, d.Name)
		}
		mentions[d.Name]++
	}
	for _, u := range req.Upsertions {
		if mentions[u.Name] == 0 {
			order = append(order, u.Name)
		}
		mentions[u.Name]++
	}
	errs := map[string]error{}
	for _, d := range req.Deletions {
		if mentions[d.Name] > 1 {
			continue
		}
		mech, ok := scramMechanismCodes[d.Mechanism]
		if !ok {
			errs[d.Name] = kerr.UnsupportedSaslMechanism
			continue
		}
		if err := b.cfg.Credentials.Delete(d.Name, mech); err != nil {
			errs[d.Name] = err
		}
	}
	for _, u := range req.Upsertions {
		if mentions[u.Name] > 1 {
			continue
		}
		mech, ok := scramMechanismCodes[u.Mechanism]
		if !ok {
			errs[u.Name] = kerr.UnsupportedSaslMechanism
			continue
		}
		if u.Iterations < DefaultSCRAMIterations || u.Iterations > auth.MaxSCRAMIterations || len(u.Salt) == 0 || len(u.SaltedPassword) == 0 {
			errs[u.Name] = fmt.Errorf("%w: %d iterations (want %d..%d), salt and salted password required",
				kerr.UnacceptableCredential, u.Iterations, DefaultSCRAMIterations, auth.MaxSCRAMIterations)
			continue
		}
		cred := auth.CredentialFromSalted(auth.SCRAMHash(mech), u.SaltedPassword, u.Salt, int(u.Iterations))
		if err := b.cfg.Credentials.Put(u.Name, mech, cred); err != nil {
			errs[u.Name] = err
		}
	}
	for _, name := range order {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = name
		err := errs[name]
		if mentions[name] > 1 {
			err = kerr.DuplicateResource
		}
		if err != nil {
			var ke *kerr.Error
			switch {
			case errors.As(err, &ke):
				r.ErrorCode = ke.Code
			case errors.Is(err, auth.ErrNoCredential):
				r.ErrorCode = kerr.ResourceNotFound.Code
			default:
				r.ErrorCode = kerr.UnknownServerError.Code
				b.logger.Error("altering SCRAM credentials failed", "user", name, "err", err)
			}
			msg := err.Error()
			r.ErrorMessage = &msg
		} else {
			b.logger.Info("SCRAM credentials altered", "user", name)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}
