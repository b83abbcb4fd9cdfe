package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	register("users", "set, delete and list the SASL users of a standalone broker's data directory: users set|delete|list", runUsers)
}

// runUsers edits the credential file offline, as `kafka-storage format
// --add-scram` does: the password is read from a file (never the command
// line, where other users of the machine see it) and only its salted,
// iterated SCRAM keys are stored. A running broker picks changes up at the
// next login.
func runUsers(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("which action? one of: users set --data-dir D --user NAME --mechanism SCRAM-SHA-512 --password-file F, users delete --data-dir D --user NAME [--mechanism M], users list --data-dir D")
	}
	action, args := args[0], args[1:]
	fs := newFlags("users")
	dataDir := fs.String("data-dir", "./data", "the broker's data directory")
	user := fs.String("user", "", "user name (set, delete)")
	mechanism := fs.String("mechanism", "SCRAM-SHA-512", "SCRAM-SHA-256 or SCRAM-SHA-512 (set; delete: only this one, empty: all)")
	passwordFile := fs.String("password-file", "", "file holding the password on its first line (set)")
	iterations := fs.Int("iterations", broker.DefaultSCRAMIterations, "PBKDF2 iterations (set)")
	zkConnect := fs.String("zookeeper", "", "a cluster's ZooKeeper `host:port/chroot`: edit its /config/users instead of --data-dir")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var store broker.CredentialStore = broker.OpenCredentialFile(broker.CredentialFilePath(*dataDir))
	where := broker.CredentialFilePath(*dataDir)
	if *zkConnect != "" {
		s, err := cluster.DialZooKeeper(ctx, *zkConnect, slog.Default())
		if err != nil {
			return fmt.Errorf("ZooKeeper %s: %w", *zkConnect, err)
		}
		defer s.Close()
		store, where = broker.NewZooKeeperCredentials(s), *zkConnect+" /config/users"
	}
	switch action {
	case "set":
		if *user == "" || *passwordFile == "" {
			return errors.New("users set needs --user and --password-file")
		}
		data, err := os.ReadFile(*passwordFile)
		if err != nil {
			return fmt.Errorf("password file: %w", err)
		}
		password, _, _ := strings.Cut(string(data), "\n")
		password = strings.TrimSuffix(password, "\r")
		cred, err := broker.NewSCRAMCredential(*mechanism, *user, password, *iterations)
		if err != nil {
			return err
		}
		if err := store.Put(*user, *mechanism, cred); err != nil {
			return err
		}
		fmt.Printf("user %s: %s credential set in %s\n", *user, *mechanism, where)
		return nil
	case "delete":
		if *user == "" {
			return errors.New("users delete needs --user")
		}
		mech := *mechanism
		if !flagGiven(fs, "mechanism") {
			mech = ""
		}
		if err := store.Delete(*user, mech); err != nil {
			return err
		}
		fmt.Printf("user %s: deleted\n", *user)
		return nil
	case "list":
		users, err := store.List()
		if err != nil {
			return err
		}
		for _, u := range users {
			var mechs []string
			for _, m := range u.Mechanisms {
				mechs = append(mechs, fmt.Sprintf("%s(iterations=%d)", m.Mechanism, m.Iterations))
			}
			fmt.Printf("%s\t%s\n", u.User, strings.Join(mechs, ","))
		}
		return nil
	}
	return fmt.Errorf("unknown action %q: use set, delete or list", action)
}

// flagGiven reports whether name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
