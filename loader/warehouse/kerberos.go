package warehouse

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"
	krb "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"
)

// kerberosLogin returns a Kerberos client logged in as o says: with a
// keytab (o.Keytab and o.Principal), else from the ticket cache kinit
// left (KRB5CCNAME, else /tmp/krb5cc_<uid>). It returns nil when neither
// the configuration (hadoop.security.authentication) nor o asks for
// Kerberos: the cluster uses simple authentication.
func kerberosLogin(o HDFSOptions, conf *hadoopConf) (*krb.Client, error) {
	wanted := strings.EqualFold(conf.get("hadoop.security.authentication"), "kerberos")
	if !wanted && o.Principal == "" && o.Keytab == "" {
		return nil, nil
	}
	why := "the cluster uses Kerberos (hadoop.security.authentication in " + conf.where() + ")"
	if !wanted {
		why = "Kerberos was asked for"
	}
	cfgPath := o.Krb5Conf
	if cfgPath == "" {
		cfgPath = os.Getenv("KRB5_CONFIG")
	}
	if cfgPath == "" {
		cfgPath = "/etc/krb5.conf"
	}
	cfg, err := krbconfig.Load(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("the Kerberos configuration %s: %w (give --krb5-conf or set KRB5_CONFIG)", cfgPath, err)
	}
	settings := []func(*krb.Settings){krb.DisablePAFXFAST(true)}

	if o.Keytab != "" {
		if o.Principal == "" {
			return nil, errors.New("a keytab needs the principal to log in as (--hdfs-principal user@REALM)")
		}
		kt, err := keytab.Load(o.Keytab)
		if err != nil {
			return nil, fmt.Errorf("keytab %s: %w", o.Keytab, err)
		}
		user, realm := splitPrincipal(o.Principal, cfg.LibDefaults.DefaultRealm)
		if realm == "" {
			return nil, fmt.Errorf("principal %s names no realm and %s sets no default_realm", o.Principal, cfgPath)
		}
		cl := krb.NewWithKeytab(user, realm, kt, cfg, settings...)
		if err := cl.Login(); err != nil {
			return nil, fmt.Errorf("the Kerberos login of %s@%s with keytab %s failed (are its keys current? klist -k -e %s shows them): %w", user, realm, o.Keytab, o.Keytab, err)
		}
		return cl, nil
	}

	cache := os.Getenv("KRB5CCNAME")
	if cache == "" {
		cache = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
	}
	path, ok := strings.CutPrefix(cache, "FILE:")
	if !ok && strings.Contains(cache, ":") {
		return nil, fmt.Errorf("%s, and the ticket cache %s is not a file (only FILE: caches are read): give --hdfs-principal and --hdfs-keytab instead", why, cache)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s, but no credentials were given: give --hdfs-principal and --hdfs-keytab, or run kinit first (no ticket cache at %s)", why, path)
	}
	cc, err := credentials.LoadCCache(path)
	if err != nil {
		return nil, fmt.Errorf("ticket cache %s: %w", path, err)
	}
	cl, err := krb.NewFromCCache(cc, cfg, settings...)
	if err != nil {
		return nil, fmt.Errorf("ticket cache %s: %w (run kinit again)", path, err)
	}
	// The client would only find out at the NameNode, with a message about
	// a rejected ticket.
	tgt := types.PrincipalName{NameType: nametype.KRB_NT_SRV_INST, NameString: []string{"krbtgt", cc.DefaultPrincipal.Realm}}
	if e, ok := cc.GetEntry(tgt); ok && !e.EndTime.IsZero() && time.Now().After(e.EndTime) {
		return nil, fmt.Errorf("the tickets in the cache %s expired at %s: run kinit again", path, e.EndTime.Format(time.RFC3339))
	}
	if o.Principal != "" {
		user, realm := splitPrincipal(o.Principal, cfg.LibDefaults.DefaultRealm)
		if got := cl.Credentials.UserName() + "@" + cl.Credentials.Realm(); got != user+"@"+realm {
			return nil, fmt.Errorf("the ticket cache %s holds tickets of %s, not of %s@%s", path, got, user, realm)
		}
	}
	return cl, nil
}

// splitPrincipal splits user[/instance][@REALM], the realm defaulting to
// def.
func splitPrincipal(p, def string) (user, realm string) {
	if i := strings.LastIndex(p, "@"); i >= 0 {
		return p[:i], p[i+1:]
	}
	return p, def
}

// DataTransferProtections are the values of dfs.data.transfer.protection,
// weakest first.
var DataTransferProtections = []string{
	hdfs.DataTransferProtectionAuthentication,
	hdfs.DataTransferProtectionIntegrity,
	hdfs.DataTransferProtectionPrivacy,
}

// CheckDataTransferProtection refuses a value that is not one of
// DataTransferProtections (empty means the cluster configuration's).
func CheckDataTransferProtection(p string) error {
	if p == "" {
		return nil
	}
	for _, v := range DataTransferProtections {
		if p == v {
			return nil
		}
	}
	return fmt.Errorf("data transfer protection %q: want one of %s", p, strings.Join(DataTransferProtections, ", "))
}
