package registry_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestThroughSRClient walks every endpoint with github.com/twmb/franz-go/pkg/sr,
// the client users' Go code calls: if our answers were shaped differently
// from Confluent's, this client would fail to read them.
func TestThroughSRClient(t *testing.T) {
	ctx := context.Background()
	cl := srtest.Start(t).Client
	v1, v2 := rec("a:string"), rec("a:string", "b:int=0")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	wantCode := func(err error, want *sr.Error) {
		t.Helper()
		var re *sr.ResponseError
		if !errors.As(err, &re) || re.SchemaError() != want {
			t.Errorf("error %v, want %s (%d)", err, want.Name, want.Code)
		}
	}

	types, err := cl.SupportedTypes(ctx)
	must(err)
	if !slices.Equal(types, []sr.SchemaType{sr.TypeAvro, sr.TypeProtobuf, sr.TypeJSON}) {
		t.Errorf("SupportedTypes = %v", types)
	}

	id1, err := cl.RegisterSchema(ctx, "orders-value", sr.Schema{Schema: v1}, -1, -1)
	must(err)
	ss2, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: v2})
	must(err)
	if ss2.Subject != "orders-value" || ss2.Version != 2 || ss2.ID == id1 || ss2.Schema.Schema != v2 {
		t.Errorf("CreateSchema = %+v", ss2)
	}
	ssOther, err := cl.CreateSchema(ctx, "audit-value", sr.Schema{Schema: v1})
	must(err)
	if ssOther.ID != id1 || ssOther.Version != 1 {
		t.Errorf("same schema under another subject = %+v, want id %d", ssOther, id1)
	}
	_, err = cl.RegisterSchema(ctx, "x", sr.Schema{Schema: "{}", Type: sr.TypeProtobuf}, -1, -1)
	wantCode(err, sr.ErrInvalidSchema)
	_, err = cl.CreateSchemaWithIDAndVersion(ctx, "x", sr.Schema{Schema: v1}, 77, 3)
	wantCode(err, sr.ErrOperationNotPermitted)

	subjects, err := cl.Subjects(ctx)
	must(err)
	if !slices.Equal(subjects, []string{"audit-value", "orders-value"}) {
		t.Errorf("Subjects = %v", subjects)
	}
	versions, err := cl.SubjectVersions(ctx, "orders-value")
	must(err)
	if !slices.Equal(versions, []int{1, 2}) {
		t.Errorf("SubjectVersions = %v", versions)
	}
	_, err = cl.SubjectVersions(ctx, "nope")
	wantCode(err, sr.ErrSubjectNotFound)

	latest, err := cl.SchemaByVersion(ctx, "orders-value", -1)
	must(err)
	if latest.Version != 2 || latest.ID != ss2.ID || latest.Type != sr.TypeAvro {
		t.Errorf("SchemaByVersion(-1) = %+v", latest)
	}
	_, err = cl.SchemaByVersion(ctx, "orders-value", 9)
	wantCode(err, sr.ErrVersionNotFound)
	text, err := cl.SchemaTextByVersion(ctx, "orders-value", 1)
	must(err)
	if text != v1 {
		t.Errorf("SchemaTextByVersion = %s", text)
	}
	all, err := cl.Schemas(ctx, "orders-value")
	must(err)
	if len(all) != 2 || all[0].Version != 1 || all[1].Version != 2 {
		t.Errorf("Schemas = %+v", all)
	}
	every, err := cl.AllSchemas(sr.WithParams(ctx, sr.LatestOnly))
	must(err)
	if len(every) != 2 {
		t.Errorf("AllSchemas(latestOnly) = %+v", every)
	}

	byID, err := cl.SchemaByID(ctx, id1)
	must(err)
	if byID.Schema != v1 {
		t.Errorf("SchemaByID = %+v", byID)
	}
	_, err = cl.SchemaByID(ctx, 999)
	wantCode(err, sr.ErrSchemaNotFound)
	if text, err := cl.SchemaTextByID(ctx, id1); err != nil || text != v1 {
		t.Errorf("SchemaTextByID = %q, %v", text, err)
	}
	if subs, err := cl.SubjectsByID(ctx, id1); err != nil || !slices.Equal(subs, []string{"audit-value", "orders-value"}) {
		t.Errorf("SubjectsByID = %v, %v", subs, err)
	}
	if svs, err := cl.SchemaVersionsByID(ctx, id1); err != nil || len(svs) != 2 {
		t.Errorf("SchemaVersionsByID = %v, %v", svs, err)
	}
	if uses, err := cl.SchemaUsagesByID(ctx, id1); err != nil || len(uses) != 2 {
		t.Errorf("SchemaUsagesByID = %v, %v", uses, err)
	}
	if refs, err := cl.SchemaReferences(ctx, "orders-value", 1); err != nil || len(refs) != 0 {
		t.Errorf("SchemaReferences = %v, %v", refs, err)
	}

	found, err := cl.LookupSchema(ctx, "orders-value", sr.Schema{Schema: v1})
	must(err)
	if found.ID != id1 || found.Version != 1 || found.Subject != "orders-value" {
		t.Errorf("LookupSchema = %+v", found)
	}
	_, err = cl.LookupSchema(ctx, "orders-value", sr.Schema{Schema: rec("z:int")})
	wantCode(err, sr.ErrSchemaNotFound)

	// Compatibility levels and dry runs.
	global := cl.Compatibility(ctx)
	must(global[0].Err)
	if global[0].Level != sr.CompatBackward {
		t.Errorf("global level %v", global[0].Level)
	}
	res := cl.Compatibility(ctx, "orders-value")
	wantCode(res[0].Err, sr.ErrSubjectLevelCompatibilityNotConfigured)
	res = cl.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), "orders-value")
	must(res[0].Err)
	if res[0].Level != sr.CompatBackward {
		t.Errorf("defaultToGlobal level %v", res[0].Level)
	}
	set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "orders-value")
	must(set[0].Err)
	if set[0].Level != sr.CompatFull {
		t.Errorf("SetCompatibility answered %v", set[0].Level)
	}
	must(cl.ResetCompatibility(ctx, "orders-value")[0].Err)
	wantCode(cl.ResetCompatibility(ctx, "orders-value")[0].Err, sr.ErrSubjectNotFound)
	check, err := cl.CheckCompatibility(ctx, "orders-value", -1, sr.Schema{Schema: rec("a:string", "b:int=0", "c:int")})
	must(err)
	if check.Is {
		t.Error("a new field without a default passed BACKWARD")
	}

	// Modes: always READWRITE.
	mode := cl.Mode(ctx)
	must(mode[0].Err)
	if mode[0].Mode != sr.ModeReadWrite {
		t.Errorf("Mode = %v", mode[0].Mode)
	}
	must(cl.SetMode(ctx, sr.ModeReadWrite)[0].Err)
	wantCode(cl.SetMode(ctx, sr.ModeImport)[0].Err, sr.ErrOperationNotPermitted)
	must(cl.ResetMode(ctx)[0].Err)

	// Deletes: soft, then hard; hard first is refused.
	wantCode(cl.DeleteSchema(ctx, "orders-value", 1, sr.HardDelete), sr.ErrSchemaVersionNotSoftDeleted)
	must(cl.DeleteSchema(ctx, "orders-value", 1, sr.SoftDelete))
	wantCode(cl.DeleteSchema(ctx, "orders-value", 1, sr.SoftDelete), sr.ErrSchemaVersionSoftDeleted)
	if vs, err := cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), "orders-value"); err != nil || !slices.Equal(vs, []int{1, 2}) {
		t.Errorf("versions with deleted = %v, %v", vs, err)
	}
	must(cl.DeleteSchema(ctx, "orders-value", 1, sr.HardDelete))
	_, err = cl.DeleteSubject(ctx, "orders-value", sr.HardDelete)
	wantCode(err, sr.ErrSubjectNotSoftDeleted)
	deleted, err := cl.DeleteSubject(ctx, "orders-value", sr.SoftDelete)
	must(err)
	if !slices.Equal(deleted, []int{2}) {
		t.Errorf("DeleteSubject(soft) = %v", deleted)
	}
	_, err = cl.DeleteSubject(ctx, "orders-value", sr.SoftDelete)
	wantCode(err, sr.ErrSubjectSoftDeleted)
	deleted, err = cl.DeleteSubject(ctx, "orders-value", sr.HardDelete)
	must(err)
	if !slices.Equal(deleted, []int{2}) {
		t.Errorf("DeleteSubject(hard) = %v", deleted)
	}
	// id1 lives on under audit-value; v2's id is gone with its last use.
	if _, err := cl.SchemaByID(ctx, id1); err != nil {
		t.Errorf("id %d after deleting orders-value: %v", id1, err)
	}
	_, err = cl.SchemaByID(ctx, ss2.ID)
	wantCode(err, sr.ErrSchemaNotFound)
}
