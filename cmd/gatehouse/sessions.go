package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gatehouse/gatehouse/auth"
)

// runSessions is `gatehouse sessions list|revoke --user <issuer>,<subject>`
// and `gatehouse sessions rekey`. Revocation is effective on the user's next
// request; the serving process then revokes the tokens at the OP (RFC 7009).
func runSessions(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if wantsHelp(args) {
			fs, _ := newFlags("sessions", e)
			fs.String("user", "", "the user as <issuer>,<subject> (the issuer exactly as in the ID token)")
			fs.String("reason", "operator revocation", "reason recorded with the revocation (revoke)")
			return fs.Parse(args)
		}
		return errors.New("usage: gatehouse sessions list|revoke --user <issuer>,<subject> [--reason text] | rekey")
	}
	verb := args[0]
	fs, cfgPath := newFlags("sessions "+verb, e)
	userFlag := fs.String("user", "", "the user as <issuer>,<subject> (the issuer exactly as in the ID token)")
	reason := fs.String("reason", "operator revocation", "reason recorded with the revocation (revoke)")
	b, err := loadBase(ctx, e, fs, cfgPath, args[1:])
	if err != nil {
		return err
	}
	defer b.close()
	store, err := auth.NewStore(auth.StoreConfig{Pool: b.pool, Auth: auth.SettingsOf(&b.cfg.Auth), Logger: b.log})
	if err != nil {
		return err
	}
	if verb == "rekey" {
		n, err := store.Rekey(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "re-encrypted %d ciphertexts with key %q\n", n, b.cfg.Auth.EncryptionKeys[0].ID)
		return nil
	}
	user, err := parseUser(*userFlag)
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		list, err := store.ListSessions(ctx, user)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(e.stdout)
		for _, s := range list {
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
		return nil
	case "revoke":
		n, err := store.RevokeUser(ctx, user, *reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "revoked %d session(s) and every refresh-token family of %s\n", n, user)
		return nil
	}
	return fmt.Errorf("sessions: unknown action %q (list, revoke, rekey)", verb)
}

// parseUser splits "<issuer>,<subject>" at the first comma (the issuer is a
// URL without commas; the subject is opaque and keeps any comma it has).
func parseUser(v string) (auth.User, error) {
	i := strings.Index(v, ",")
	if i <= 0 || i == len(v)-1 {
		return auth.User{}, errors.New("--user must be <issuer>,<subject>, e.g. --user https://login.example.com/,248289761001")
	}
	return auth.User{Issuer: strings.TrimSpace(v[:i]), Subject: strings.TrimSpace(v[i+1:])}, nil
}
