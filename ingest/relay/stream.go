package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/twmb/franz-go/pkg/kgo"
)

// streamer is one replication session: a reader decoding the WAL and
// producing records (Kafka's acknowledgements complete their transactions)
// and a status sender confirming the watermark. Only the status sender
// writes to the connection.
type streamer struct {
	r    *Relay
	conn *pgconn.PgConn
	wm   *watermark
	fail func(error)

	rels     map[uint32]*relation
	cur      []*Row
	inTxn    bool
	streams  map[uint32][]streamRow // streamed (large) transactions by top-level xid
	inStream bool
	xid      uint32 // top-level xid of the current stream segment

	serverEnd atomic.Uint64 // latest WAL end from a keepalive
	kick      chan struct{} // ask the status sender to report now
}

type streamRow struct {
	row    *Row
	subxid uint32
}

// stream runs one replication session until an error or ctx ends.
func (r *Relay) stream(ctx context.Context) error {
	if err := r.setupPublication(ctx); err != nil {
		return err
	}
	pcfg, err := pgconn.ParseConfig(r.cfg.DatabaseURL)
	if err != nil {
		return &fatalError{fmt.Errorf("parse database url: %w", err)}
	}
	pcfg.RuntimeParams["replication"] = "database"
	pcfg.ConnectTimeout = 5 * time.Second
	conn, err := pgconn.ConnectConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("replication connection: %w", err)
	}
	defer conn.Close(context.Background())
	start, created, err := r.ensureSlot(ctx, conn)
	if err != nil {
		return err
	}
	if err := r.snapshot(ctx, created); err != nil {
		return err
	}
	if start, err = r.resumeLSN(ctx, start); err != nil {
		return err
	}
	args := []string{"proto_version '2'", "publication_names '" + r.cfg.Relay.Publication + "'", "streaming 'on'"}
	if err := pglogrepl.StartReplication(ctx, conn, r.cfg.Relay.Slot, start, pglogrepl.StartReplicationOptions{PluginArgs: args}); err != nil {
		return fmt.Errorf("start replication: %w", err)
	}
	r.markReady()
	r.log.Info("streaming outbox inserts", "slot", r.cfg.Relay.Slot, "publication", r.cfg.Relay.Publication, "from_lsn", start.String())

	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := &streamer{r: r, conn: conn, wm: newWatermark(start), fail: func(err error) { cancel(err) },
		rels: map[uint32]*relation{}, streams: map[uint32][]streamRow{},
		kick: make(chan struct{}, 1)}
	s.serverEnd.Store(uint64(start))
	// pgconn is not safe for concurrent use beyond one reader beside one
	// writer: the reader gets a context of its own, cancelled only once the
	// writers (status) and the others have returned, and conn is closed
	// only after both. It receives without a context (a context watch per
	// message costs more than decoding the message) and is unblocked by a
	// read deadline on the socket.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(sctx))
	defer rcancel()
	var writers, reader sync.WaitGroup
	run := func(wg *sync.WaitGroup, ctx context.Context, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				cancel(err)
			}
		}()
	}
	run(&reader, rctx, s.read)
	for _, fn := range []func(context.Context) error{s.status, r.heartbeat} {
		run(&writers, sctx, fn)
	}
	<-sctx.Done()
	writers.Wait()
	rcancel()
	_ = conn.Conn().SetReadDeadline(time.Now())
	reader.Wait()
	r.statusMu.Lock()
	r.lastLag = time.Time{}
	r.statusMu.Unlock()
	if err := context.Cause(sctx); ctx.Err() == nil {
		return err
	}
	return nil
}

// read decodes the replication stream and produces committed rows (ctx is
// the records' context).
func (s *streamer) read(ctx context.Context) error {
	for {
		msg, err := s.conn.ReceiveMessage(context.Background())
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("receive replication message: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return fmt.Errorf("parse keepalive: %w", err)
				}
				if uint64(ka.ServerWALEnd) > s.serverEnd.Load() {
					s.serverEnd.Store(uint64(ka.ServerWALEnd))
				}
				if ka.ReplyRequested {
					s.nudge()
				}
			case pglogrepl.XLogDataByteID:
				x, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return fmt.Errorf("parse xlogdata: %w", err)
				}
				if err := s.handle(ctx, x.WALData); err != nil {
					return err
				}
			}
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("replication: %w", pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone:
			return errors.New("replication: server ended the stream")
		}
	}
}

func (s *streamer) nudge() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// handle applies one pgoutput message. Inserts, nearly every message of a
// drain, are decoded here; the others by pglogrepl.
func (s *streamer) handle(ctx context.Context, data []byte) error {
	if len(data) > 0 && data[0] == 'I' {
		xid, relID, tuple, err := parseInsert(data, s.inStream)
		if err != nil {
			return fmt.Errorf("decode pgoutput message: %w", err)
		}
		row, err := s.decode(relID, tuple)
		if err != nil || row == nil {
			return err
		}
		if s.inStream {
			s.streams[s.xid] = append(s.streams[s.xid], streamRow{row: row, subxid: xid})
		} else {
			s.cur = append(s.cur, row)
		}
		return nil
	}
	msg, err := pglogrepl.ParseV2(data, s.inStream)
	if err != nil {
		return fmt.Errorf("decode pgoutput message: %w", err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessageV2:
		s.rels[m.RelationID] = newRelation(&m.RelationMessage)
	case *pglogrepl.BeginMessage:
		s.cur, s.inTxn = nil, true
		s.setOpen()
	case *pglogrepl.CommitMessage:
		rows := s.cur
		s.cur, s.inTxn = nil, false
		s.publish(ctx, rows, m.TransactionEndLSN, m.CommitTime)
		s.setOpen()
	case *pglogrepl.StreamStartMessageV2:
		s.inStream, s.xid = true, m.Xid
		if _, ok := s.streams[m.Xid]; !ok {
			s.streams[m.Xid] = nil
		}
		s.setOpen()
	case *pglogrepl.StreamStopMessageV2:
		s.inStream = false
	case *pglogrepl.StreamCommitMessageV2:
		srows := s.streams[m.Xid]
		delete(s.streams, m.Xid)
		rows := make([]*Row, len(srows))
		for i, sr := range srows {
			rows[i] = sr.row
		}
		s.publish(ctx, rows, m.TransactionEndLSN, m.CommitTime)
		s.setOpen()
	case *pglogrepl.StreamAbortMessageV2:
		if m.Xid == m.SubXid {
			delete(s.streams, m.Xid)
		} else {
			kept := s.streams[m.Xid][:0]
			for _, sr := range s.streams[m.Xid] {
				if sr.subxid != m.SubXid {
					kept = append(kept, sr)
				}
			}
			s.streams[m.Xid] = kept
		}
		s.setOpen()
	}
	return nil
}

func (s *streamer) setOpen() {
	n := len(s.streams)
	if s.inTxn {
		n++
	}
	s.wm.setOpen(n)
}

// publish registers a committed transaction and produces its rows, the
// payloads erased since their insert replaced by the erasure marker
// (redactErased); it is complete (the watermark may pass it) once Kafka
// acknowledged all of them. Nothing is written back to the outbox: it is a
// log (cursor.go).
func (s *streamer) publish(ctx context.Context, rows []*Row, end pglogrepl.LSN, commitTime time.Time) {
	t := s.wm.add(end, commitTime, rows)
	if len(rows) == 0 {
		s.wm.complete(t)
		return
	}
	if err := s.r.redactErased(ctx, rows); err != nil {
		s.fail(err)
		return
	}
	if err := s.r.ensureTopics(ctx, topicsOf(rows)...); err != nil {
		s.fail(err)
		return
	}
	var snk *sink
	for _, row := range rows {
		if snk == nil || row.Topic != snk.topic {
			snk = s.r.m.sink(row.Topic, pathStream)
		}
		m := snk
		rec, end := s.r.startPublish(ctx, row, pathStream)
		s.r.cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			end(rec, err)
			if err != nil {
				m.errors.Inc()
				s.fail(fmt.Errorf("produce to %s: %w", rec.Topic, err))
				return
			}
			m.published.Inc()
			m.latency.Observe(s.r.cfg.Now().Sub(commitTime).Seconds())
			if t.remaining.Add(-1) == 0 {
				t.rows = nil
				s.wm.complete(t)
				s.nudge()
			}
		})
	}
}

// status confirms the watermark to PostgreSQL every StatusInterval (asking
// for a keepalive, whose WAL end lets an idle slot advance) and whenever
// the watermark moved or the server asked.
func (s *streamer) status(ctx context.Context) error {
	t := time.NewTicker(s.r.cfg.Relay.StatusInterval)
	defer t.Stop()
	var last, recorded pglogrepl.LSN
	var recordedAt time.Time
	for {
		reply := false
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			reply = true
		case <-s.kick:
		}
		conf := s.wm.advanceIdle(pglogrepl.LSN(s.serverEnd.Load()))
		if conf == last && !reply {
			continue
		}
		if err := pglogrepl.SendStandbyStatusUpdate(ctx, s.conn, pglogrepl.StandbyStatusUpdate{
			WALWritePosition: conf, ReplyRequested: reply,
		}); err != nil {
			return fmt.Errorf("send standby status: %w", err)
		}
		last = conf
		s.r.hz.report(conf, time.Now())
		if conf > recorded && time.Since(recordedAt) >= s.r.cfg.Relay.StatusInterval {
			if err := s.r.recordLSN(ctx, conf); err != nil {
				s.r.log.Debug("record the confirmed position", "err", err)
			} else {
				recorded, recordedAt = conf, time.Now()
			}
		}
		s.r.m.confirmed.Set(float64(conf))
		_, _, oldest := s.wm.state()
		s.r.statusMu.Lock()
		s.r.lastLag = oldest
		s.r.statusMu.Unlock()
	}
}
