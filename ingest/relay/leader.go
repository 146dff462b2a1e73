package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// lockKey is the advisory lock that keeps one relay active per slot name,
// in both modes.
const lockSQL = `SELECT pg_try_advisory_lock(hashtextextended('gatehouse.relay:' || $1, 0))`

// leadership holds the session-level advisory lock on a dedicated
// connection. PostgreSQL releases it when that session ends, including when
// the process holding it is killed, so a waiting relay takes over within
// one retry interval.
type leadership struct {
	conn *pgx.Conn
}

// acquire blocks until it holds the lock for slot or ctx ends; it retries
// every interval.
func acquire(ctx context.Context, dbURL, slot string, interval time.Duration, waiting func()) (*leadership, error) {
	announced := false
	for {
		ok, conn, err := tryLock(ctx, dbURL, slot)
		if err == nil && ok {
			return &leadership{conn: conn}, nil
		}
		if conn != nil {
			_ = conn.Close(context.Background())
		}
		if err == nil && !announced && waiting != nil {
			waiting()
			announced = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(interval):
		}
	}
}

func tryLock(ctx context.Context, dbURL, slot string) (bool, *pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, dbURL)
	if err != nil {
		return false, nil, fmt.Errorf("connect for relay lock: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(cctx, lockSQL, slot).Scan(&ok); err != nil {
		return false, conn, fmt.Errorf("relay lock: %w", err)
	}
	return ok, conn, nil
}

// watch returns when the lock's session is lost (checked every interval) or
// ctx ends.
func (l *leadership) watch(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := l.conn.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("relay lock session lost: %w", err)
			}
		}
	}
}

// release ends the session, which releases the lock.
func (l *leadership) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = l.conn.Close(ctx)
}
