package consumers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// session is one group membership: one client, held records, callbacks.
type session struct {
	r      *Runner
	cl     *kgo.Client
	mu     sync.Mutex
	held   map[tp][]*kgo.Record // not yet due records of paused retry partitions
	rebal  sync.RWMutex         // read-held while processing; callbacks take it
	broken atomic.Bool          // a record could not be finished: restart the session
	// finishing is closed when the last main batch's finish (apply,
	// retry forwards, marks) has run; nil before the first.
	finishing chan struct{}
}

func (r *Runner) session(ctx context.Context) error {
	s := &session{r: r, held: map[tp][]*kgo.Record{}}
	opts, err := kafka.Options(kafka.ClientConfig{Brokers: r.cfg.Brokers, ClientID: r.cfg.ClientID,
		Logger: r.log, Registerer: r.cfg.Registerer, Name: "consumer"})
	if err != nil {
		return err
	}
	opts = append(opts,
		kgo.ConsumerGroup(r.cfg.Group),
		kgo.ConsumeTopics(r.layout.consumed()...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(time.Second),
		kgo.SessionTimeout(r.cfg.SessionTimeout),
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.ProducerLinger(0),
	)
	cl, err := kgo.NewClient(append(opts, r.cfg.KafkaOpts...)...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	s.cl = cl
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.CommitMarkedOffsets(cctx); err != nil {
			r.log.Warn("commit on close", "err", err)
		}
		cl.Close() // leaves the group; onRevoked commits again
	}()
	wctx, wstop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); s.watchEnds(wctx) }()
	defer func() { wstop(); <-watched }() // before the client closes
	// Records already polled are finished after ctx ends, within DrainTimeout.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer pcancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(r.cfg.DrainTimeout, pcancel) })
	defer stop()
	defer s.waitFinished() // before the commit on close
	for ctx.Err() == nil {
		pollCtx, cancel := s.pollContext(ctx)
		fetches := cl.PollRecords(pollCtx, r.cfg.MaxPollRecords)
		cancel()
		r.m.lastPoll.WithLabelValues(r.cfg.Group).Set(float64(r.cfg.Now().UnixNano()) / 1e9)
		if fetches.IsClientClosed() {
			return errors.New("client closed")
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				r.log.Warn("fetch error", "topic", t, "partition", p, "err", err)
			}
		})
		// franz-go holds rebalance callbacks only after a non-empty poll;
		// held records may be processed after an empty one, so the callbacks
		// also wait for rebal: no partition is revoked while its records are
		// being processed and marked.
		s.rebal.RLock()
		if finish := s.process(pctx, s.collect(fetches)); finish != nil {
			s.pipeline(finish) // read-holds rebal until it has run
		} else {
			s.rebal.RUnlock()
		}
		cl.AllowRebalance()
		if s.broken.Load() {
			s.waitFinished()
			return errors.New("a record could not be finished")
		}
	}
	return nil
}

// pipeline runs finish, the commit half of a main batch, while the loop
// polls and handles the next batch. It first waits for the previous
// batch's finish: at most one finish runs beside the loop, so when the
// commits are slower than the handlers the loop waits, the records pile up
// in the client and the next poll is a larger batch (one claim and one
// commit for more records) instead of a queue of finishes growing without
// bound ahead of the marked offsets. The caller's read hold of rebal
// passes to finish: a rebalance callback waits until the batch is marked,
// so no revoked partition's offset is committed before its work, and none
// is marked after the revoke.
func (s *session) pipeline(finish func()) {
	s.waitFinished()
	done := make(chan struct{})
	s.finishing = done
	go func() {
		defer close(done)
		defer s.rebal.RUnlock()
		finish()
	}()
}

// waitFinished waits for the last main batch's finish.
func (s *session) waitFinished() {
	if s.finishing != nil {
		<-s.finishing
	}
}

// endsEvery is how often a session lists its topics' end offsets for
// gatehouse_consumer_lag_records.
const endsEvery = 5 * time.Second

// watchEnds lists the end offsets of the consumed topics every endsEvery
// until ctx ends, so the lag counts records the loop has not polled yet
// (it polls nothing while it waits for a commit). A failed listing is
// skipped: the next one tries again.
func (s *session) watchEnds(ctx context.Context) {
	adm := kadm.NewClient(s.cl)
	t := time.NewTicker(endsEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lctx, cancel := context.WithTimeout(ctx, endsEvery)
		listed, err := adm.ListEndOffsets(lctx, s.r.layout.consumed()...)
		cancel()
		if err != nil {
			continue
		}
		ends := map[tp]int64{}
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err == nil && o.Offset >= 0 {
				ends[tp{o.Topic, o.Partition}] = o.Offset
			}
		})
		s.r.parts.ends(ends)
	}
}

// pollContext bounds a poll by the earliest due time of held records, so
// the loop wakes up to process them without ever sleeping.
func (s *session) pollContext(ctx context.Context) (context.Context, context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var earliest time.Time
	for k, recs := range s.held {
		due := s.r.layout.dueAt(recs[0], s.r.layout.roles[k.topic])
		if earliest.IsZero() || due.Before(earliest) {
			earliest = due
		}
	}
	if earliest.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, earliest)
}

// collect groups polled records by partition, in front of each the held
// records that are due now (their partitions are resumed).
func (s *session) collect(fetches kgo.Fetches) map[tp][]*kgo.Record {
	batches := map[tp][]*kgo.Record{}
	now := s.r.cfg.Now()
	s.mu.Lock()
	resume := map[string][]int32{}
	for k, recs := range s.held {
		if !s.r.layout.dueAt(recs[0], s.r.layout.roles[k.topic]).After(now) {
			batches[k] = recs
			delete(s.held, k)
			resume[k.topic] = append(resume[k.topic], k.partition)
		}
	}
	s.mu.Unlock()
	if len(resume) > 0 {
		s.cl.ResumeFetchPartitions(resume)
	}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		k := tp{p.Topic, p.Partition}
		first, at := p.Records[0], p.Records[0].Timestamp
		if role := s.r.layout.roles[k.topic]; role.level > 0 {
			at = s.r.layout.dueAt(first, role)
		}
		s.r.parts.fetched(k, p.HighWatermark, first.Offset, p.Records[len(p.Records)-1].Offset, at)
		batches[k] = append(batches[k], p.Records...)
	})
	return batches
}

// process runs the poll's main-topic records as one batch (processMain)
// beside the retry partitions (in parallel, each in offset order) and
// returns when the retry partitions are finished or held and the main
// batch is handled; finish (nil without main-topic records) applies and
// marks the main batch.
func (s *session) process(ctx context.Context, batches map[tp][]*kgo.Record) (finish func()) {
	sem := make(chan struct{}, s.r.cfg.Concurrency)
	var wg sync.WaitGroup
	main := map[tp][]*kgo.Record{}
	for k, recs := range batches {
		if s.r.layout.roles[k.topic].level == 0 {
			main[k] = recs
			delete(batches, k)
		}
	}
	if len(main) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			finish = s.processMain(ctx, main)
		}()
	}
	for k, recs := range batches {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.processPartition(ctx, k, recs)
		}()
	}
	wg.Wait()
	return finish
}

func (s *session) processPartition(ctx context.Context, k tp, recs []*kgo.Record) {
	role := s.r.layout.roles[k.topic]
	for i, rec := range recs {
		at := rec.Timestamp
		if role.level > 0 {
			at = s.r.layout.dueAt(rec, role)
			if at.After(s.r.cfg.Now()) {
				s.mu.Lock()
				s.held[k] = recs[i:]
				s.mu.Unlock()
				s.cl.PauseFetchPartitions(map[string][]int32{k.topic: {k.partition}})
				s.r.parts.head(k, rec.Offset, at)
				return
			}
		}
		s.r.parts.head(k, rec.Offset, at)
		if !s.handle(ctx, rec, role) {
			s.broken.Store(true)
			return
		}
		s.cl.MarkCommitRecords(rec)
		s.r.parts.done(k, rec.Offset, at)
	}
}

func (s *session) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	s.rebal.Lock()
	defer s.rebal.Unlock()
	s.r.m.rebalances.WithLabelValues(s.r.cfg.Group, "assigned").Inc()
	s.r.log.Info("partitions assigned", "partitions", assigned)
}

// onRevoked drops held records of revoked partitions (they were never
// marked) and commits everything marked, so the next owner starts exactly
// after the last finished record.
func (s *session) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	s.rebal.Lock()
	defer s.rebal.Unlock()
	s.r.m.rebalances.WithLabelValues(s.r.cfg.Group, "revoked").Inc()
	s.forget(cl, revoked)
	if err := cl.CommitMarkedOffsets(ctx); err != nil {
		s.r.log.Warn("commit on revoke", "err", err)
	}
	s.r.log.Info("partitions revoked", "partitions", revoked)
}

// onLost forgets lost partitions without committing: another member may
// already own them.
func (s *session) onLost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	s.rebal.Lock()
	defer s.rebal.Unlock()
	s.r.m.rebalances.WithLabelValues(s.r.cfg.Group, "lost").Inc()
	s.forget(cl, lost)
	s.r.log.Warn("partitions lost", "partitions", lost)
}

func (s *session) forget(cl *kgo.Client, parts map[string][]int32) {
	s.mu.Lock()
	for t, ps := range parts {
		for _, p := range ps {
			delete(s.held, tp{t, p})
		}
	}
	s.mu.Unlock()
	cl.ResumeFetchPartitions(parts)
	s.r.parts.drop(parts)
}
