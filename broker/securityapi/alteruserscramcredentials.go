package securityapi

// AlterUserScramCredentials (key 51), version 0: SCRAM users managed
// online, as kafka-configs and kadm do.
//
// Takes a salted password computed by the client (the password never
// crosses the wire) and stores only the keys derived from it; the caller
// needs Alter on the cluster. A user named twice in one request gets
// DUPLICATE_RESOURCE for every mention, as in Kafka; an unknown mechanism
// UNSUPPORTED_SASL_MECHANISM; iterations outside 4096..16384
// UNACCEPTABLE_CREDENTIAL; deleting what is not there RESOURCE_NOT_FOUND.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(51, 0, 0, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.alterUserSCRAMCredentials) })
}

func (h *Handlers) alterUserSCRAMCredentials(who *kafkaapi.Request, req *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	if !h.authz.MayCluster(who.Who, kmsg.ACLOperationAlter) {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		for _, d := range req.Deletions {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = d.Name, acl.ClusterRefused
			resp.Results = append(resp.Results, res)
		}
		for _, u := range req.Upsertions {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = u.Name, acl.ClusterRefused
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
		if err := h.creds.Delete(d.Name, mech); err != nil {
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
		if u.Iterations < auth.DefaultSCRAMIterations || u.Iterations > auth.MaxSCRAMIterations || len(u.Salt) == 0 || len(u.SaltedPassword) == 0 {
			errs[u.Name] = fmt.Errorf("%w: %d iterations (want %d..%d), salt and salted password required",
				kerr.UnacceptableCredential, u.Iterations, auth.DefaultSCRAMIterations, auth.MaxSCRAMIterations)
			continue
		}
		cred := auth.CredentialFromSalted(auth.SCRAMHash(mech), u.SaltedPassword, u.Salt, int(u.Iterations))
		if err := h.creds.Put(u.Name, mech, cred); err != nil {
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
				h.logger.Error("altering SCRAM credentials failed", "user", name, "err", err)
			}
			msg := err.Error()
			r.ErrorMessage = &msg
		} else {
			h.logger.Info("SCRAM credentials altered", "user", name)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}
