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

// membership is one member of the consumer group, from joining to leaving:
// one client, the partitions the group assigns it (through as many group
// generations as rebalances), held records, the rebalance callbacks. It
// ends when a record cannot be finished, and the runner joins again.
type membership struct {
	r      *Runner
	cl     *kgo.Client
	mu     sync.Mutex
	held   map[tp][]*kgo.Record // not yet due records of paused retry partitions
	rebal  sync.RWMutex         // read-held while processing; callbacks take it
	broken atomic.Bool          // a record could not be finished: leave and join again
	// finishing is closed when the last main batch's finish (apply,
	// retry forwards, marks) has run; nil before the first.
	finishing chan struct{}
}

// join joins the group as a new member and consumes until ctx ends (nil)
// or the membership breaks (an error; the runner joins again).
func (r *Runner) join(ctx context.Context) error {
	m := &membership{r: r, held: map[tp][]*kgo.Record{}}
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
		kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onLost),
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.ProducerLinger(0),
	)
	cl, err := kgo.NewClient(append(opts, r.cfg.KafkaOpts...)...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	m.cl = cl
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
	go func() { defer close(watched); m.watchEnds(wctx) }()
	defer func() { wstop(); <-watched }() // before the client closes
	// Records already polled are finished after ctx ends, within DrainTimeout.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer pcancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(r.cfg.DrainTimeout, pcancel) })
	defer stop()
	defer m.waitFinished() // before the commit on close
	for ctx.Err() == nil {
		pollCtx, cancel := m.pollContext(ctx)
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
		m.rebal.RLock()
		if finish := m.process(pctx, m.collect(fetches)); finish != nil {
			m.pipeline(finish) // read-holds rebal until it has run
		} else {
			m.rebal.RUnlock()
		}
		cl.AllowRebalance()
		if m.broken.Load() {
			m.waitFinished()
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
func (m *membership) pipeline(finish func()) {
	m.waitFinished()
	done := make(chan struct{})
	m.finishing = done
	go func() {
		defer close(done)
		defer m.rebal.RUnlock()
		finish()
	}()
}

// waitFinished waits for the last main batch's finish.
func (m *membership) waitFinished() {
	if m.finishing != nil {
		<-m.finishing
	}
}

// endsEvery is how often a membership lists its topics' end offsets for
// gatehouse_consumer_lag_records.
const endsEvery = 5 * time.Second

// watchEnds lists the end offsets of the consumed topics every endsEvery
// until ctx ends, so the lag counts records the loop has not polled yet
// (it polls nothing while it waits for a commit). A failed listing is
// skipped: the next one tries again.
func (m *membership) watchEnds(ctx context.Context) {
	adm := kadm.NewClient(m.cl)
	t := time.NewTicker(endsEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lctx, cancel := context.WithTimeout(ctx, endsEvery)
		listed, err := adm.ListEndOffsets(lctx, m.r.layout.consumed()...)
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
		m.r.parts.ends(ends)
	}
}

// pollContext bounds a poll by the earliest due time of held records, so
// the loop wakes up to process them without ever sleeping.
func (m *membership) pollContext(ctx context.Context) (context.Context, context.CancelFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var earliest time.Time
	for k, recs := range m.held {
		due := m.r.layout.dueAt(recs[0], m.r.layout.roles[k.topic])
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
func (m *membership) collect(fetches kgo.Fetches) map[tp][]*kgo.Record {
	batches := map[tp][]*kgo.Record{}
	now := m.r.cfg.Now()
	m.mu.Lock()
	resume := map[string][]int32{}
	for k, recs := range m.held {
		if !m.r.layout.dueAt(recs[0], m.r.layout.roles[k.topic]).After(now) {
			batches[k] = recs
			delete(m.held, k)
			resume[k.topic] = append(resume[k.topic], k.partition)
		}
	}
	m.mu.Unlock()
	if len(resume) > 0 {
		m.cl.ResumeFetchPartitions(resume)
	}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		k := tp{p.Topic, p.Partition}
		first, at := p.Records[0], p.Records[0].Timestamp
		if role := m.r.layout.roles[k.topic]; role.level > 0 {
			at = m.r.layout.dueAt(first, role)
		}
		m.r.parts.fetched(k, p.HighWatermark, first.Offset, p.Records[len(p.Records)-1].Offset, at)
		batches[k] = append(batches[k], p.Records...)
	})
	return batches
}

// process runs the poll's main-topic records as one batch (processMain)
// beside the retry partitions (in parallel, each in offset order) and
// returns when the retry partitions are finished or held and the main
// batch is handled; finish (nil without main-topic records) applies and
// marks the main batch.
func (m *membership) process(ctx context.Context, batches map[tp][]*kgo.Record) (finish func()) {
	sem := make(chan struct{}, m.r.cfg.Concurrency)
	var wg sync.WaitGroup
	main := map[tp][]*kgo.Record{}
	for k, recs := range batches {
		if m.r.layout.roles[k.topic].level == 0 {
			main[k] = recs
			delete(batches, k)
		}
	}
	if len(main) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			finish = m.processMain(ctx, main)
		}()
	}
	for k, recs := range batches {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			m.processPartition(ctx, k, recs)
		}()
	}
	wg.Wait()
	return finish
}

func (m *membership) processPartition(ctx context.Context, k tp, recs []*kgo.Record) {
	role := m.r.layout.roles[k.topic]
	for i, rec := range recs {
		at := rec.Timestamp
		if role.level > 0 {
			at = m.r.layout.dueAt(rec, role)
			if at.After(m.r.cfg.Now()) {
				m.mu.Lock()
				m.held[k] = recs[i:]
				m.mu.Unlock()
				m.cl.PauseFetchPartitions(map[string][]int32{k.topic: {k.partition}})
				m.r.parts.head(k, rec.Offset, at)
				return
			}
		}
		m.r.parts.head(k, rec.Offset, at)
		if !m.handle(ctx, rec, role) {
			m.broken.Store(true)
			return
		}
		m.cl.MarkCommitRecords(rec)
		m.r.parts.done(k, rec.Offset, at)
	}
}

func (m *membership) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	m.rebal.Lock()
	defer m.rebal.Unlock()
	m.r.m.rebalances.WithLabelValues(m.r.cfg.Group, "assigned").Inc()
	m.r.log.Info("partitions assigned", "partitions", assigned)
}

// onRevoked drops held records of revoked partitions (they were never
// marked) and commits everything marked, so the next owner starts exactly
// after the last finished record.
func (m *membership) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	m.rebal.Lock()
	defer m.rebal.Unlock()
	m.r.m.rebalances.WithLabelValues(m.r.cfg.Group, "revoked").Inc()
	m.forget(cl, revoked)
	if err := cl.CommitMarkedOffsets(ctx); err != nil {
		m.r.log.Warn("commit on revoke", "err", err)
	}
	m.r.log.Info("partitions revoked", "partitions", revoked)
}

// onLost forgets lost partitions without committing: another member may
// already own them.
func (m *membership) onLost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	m.rebal.Lock()
	defer m.rebal.Unlock()
	m.r.m.rebalances.WithLabelValues(m.r.cfg.Group, "lost").Inc()
	m.forget(cl, lost)
	m.r.log.Warn("partitions lost", "partitions", lost)
}

func (m *membership) forget(cl *kgo.Client, parts map[string][]int32) {
	m.mu.Lock()
	for t, ps := range parts {
		for _, p := range ps {
			delete(m.held, tp{t, p})
		}
	}
	m.mu.Unlock()
	cl.ResumeFetchPartitions(parts)
	m.r.parts.drop(parts)
}
