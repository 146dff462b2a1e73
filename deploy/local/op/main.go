// Command op is the local OpenID Provider of `make run` (deploy/local/run.sh):
// zitadel/oidc's example OP (its users, clients and in-memory storage),
// listening on loopback only. The upstream example listens on every
// interface (":PORT"), which exposes a development OP, with its well-known
// test user, to the network; this one binds 127.0.0.1.
//
// Environment, as the upstream example: PORT (default 9998), REDIRECT_URI
// (comma-separated), USERS_FILE. Its issuer is http://localhost:PORT/.
package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/zitadel/oidc/v3/example/server/config"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// listenAddr is the address the OP listens on: loopback, at port.
func listenAddr(port string) string { return "127.0.0.1:" + port }

func main() {
	cfg := config.FromEnvVars(&config.Config{Port: config.DefaultIssuerPort})
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	issuer := fmt.Sprintf("http://localhost:%s/", cfg.Port)
	storage.RegisterClients(
		storage.NativeClient("native", cfg.RedirectURI...),
		storage.WebClient("web", "secret", cfg.RedirectURI...),
		storage.WebClient("api", "secret", cfg.RedirectURI...),
	)
	var users storage.UserStore
	if cfg.UsersFile == "" {
		users = storage.NewUserStore(issuer)
	} else {
		var err error
		if users, err = storage.StoreFromFile(cfg.UsersFile); err != nil {
			logger.Error("cannot create UserStore", "error", err)
			os.Exit(1)
		}
	}
	router := exampleop.SetupServer(issuer, storage.NewStorage(users), logger, false)
	server := &http.Server{Addr: listenAddr(cfg.Port), Handler: router}
	logger.Info("local OP listening on loopback", "addr", server.Addr, "issuer", issuer)
	if err := server.ListenAndServe(); err != http.ErrServerClosed {
		logger.Error("server terminated", "error", err)
		os.Exit(1)
	}
}
