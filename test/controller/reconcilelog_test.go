package controllertest

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/opendatahub-io/odh-serving/internal/controller"
)

// reconciled tells which services the service controllers of this process
// have reconciled, and when, from controller-runtime's log: it logs each
// reconcile at V(5), "Reconciling" as it begins and "Reconcile done..." or
// "Reconcile successful" as it ends without error, with the request's
// namespace and name and a reconcile ID. A test that must show what
// reconciles do (steady state writes nothing) waits for reconciles of each
// of its services rather than for a while.
var reconciled = &reconcileLog{began: map[string]uint64{}, done: map[string][]uint64{}}

// init sets controller-runtime's logger: the reconcile log, and with
// TEST_LOG=1 also the controller's logs on stderr (testenv.InitLogger's).
func init() {
	var next logr.LogSink
	if os.Getenv("TEST_LOG") != "" {
		next = zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)).GetSink()
	}
	ctrllog.SetLogger(logr.New(&reconcileSink{log: reconciled, next: next}))
}

// reconcileLog numbers the beginnings of reconciles: a mark is the number
// of the last one, so the reconciles begun after it have greater numbers.
type reconcileLog struct {
	mu    sync.Mutex
	seq   uint64
	began map[string]uint64   // by reconcile ID, until it ends
	done  map[string][]uint64 // by namespace/name: the numbers of its reconciles that ended without error
}

// mark is a point in time: reconciles begun after it count in since.
func (l *reconcileLog) mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// since is how many reconciles of the service namespace/name began after
// mark and ended without error.
func (l *reconcileLog) since(mark uint64, namespace, name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, began := range l.done[namespace+"/"+name] {
		if began > mark {
			n++
		}
	}
	return n
}

// atLeast checks that every named service of namespace has n reconciles
// begun after mark and ended without error.
func (l *reconcileLog) atLeast(n int, mark uint64, namespace string, names []string) error {
	var short []string
	for _, name := range names {
		if got := l.since(mark, namespace, name); got < n {
			short = append(short, fmt.Sprintf("%s %d", name, got))
		}
	}
	if len(short) > 0 {
		return fmt.Errorf("reconciles of %d wanted, so far: %s", n, strings.Join(short, ", "))
	}
	return nil
}

func (l *reconcileLog) begin(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	l.began[id] = l.seq
}

func (l *reconcileLog) end(id, key string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	began, found := l.began[id]
	delete(l.began, id)
	if found && ok {
		l.done[key] = append(l.done[key], began)
	}
}

// reconcileSink is a logr sink that feeds the service controller's
// reconcile lines to log, and every line to next, when set, as next's
// level allows.
type reconcileSink struct {
	log  *reconcileLog
	next logr.LogSink
	// values are the logger's, as WithValues gave them.
	values []any
}

// reconcileLevel is the V level of controller-runtime's reconcile lines.
const reconcileLevel = 5

func (s *reconcileSink) Init(info logr.RuntimeInfo) {
	if s.next != nil {
		s.next.Init(info)
	}
}

func (s *reconcileSink) Enabled(level int) bool {
	return level == reconcileLevel || s.next != nil && s.next.Enabled(level)
}

func (s *reconcileSink) Info(level int, msg string, kv ...any) {
	if level == reconcileLevel {
		switch {
		case msg == "Reconciling":
			if id, _, ok := s.request(); ok {
				s.log.begin(id)
			}
		case msg == "Reconcile successful" || strings.HasPrefix(msg, "Reconcile done"):
			if id, key, ok := s.request(); ok {
				s.log.end(id, key, true)
			}
		}
	}
	if s.next != nil && s.next.Enabled(level) {
		s.next.Info(level, msg, kv...)
	}
}

func (s *reconcileSink) Error(err error, msg string, kv ...any) {
	if msg == "Reconciler error" {
		if id, key, ok := s.request(); ok {
			s.log.end(id, key, false)
		}
	}
	if s.next != nil {
		s.next.Error(err, msg, kv...)
	}
}

// request is the reconcile ID and namespace/name of a line of the service
// controller's reconcile.
func (s *reconcileSink) request() (id, key string, ok bool) {
	var ctrl, ns, name string
	for i := 0; i+1 < len(s.values); i += 2 {
		k, _ := s.values[i].(string)
		switch k {
		case "controller":
			ctrl, _ = s.values[i+1].(string)
		case "namespace":
			ns, _ = s.values[i+1].(string)
		case "name":
			name, _ = s.values[i+1].(string)
		case "reconcileID":
			id = fmt.Sprint(s.values[i+1])
		}
	}
	return id, ns + "/" + name, ctrl == controller.ControllerName && id != "" && name != ""
}

func (s *reconcileSink) WithValues(kv ...any) logr.LogSink {
	out := &reconcileSink{log: s.log, values: append(slices.Clip(s.values), kv...)}
	if s.next != nil {
		out.next = s.next.WithValues(kv...)
	}
	return out
}

func (s *reconcileSink) WithName(name string) logr.LogSink {
	out := &reconcileSink{log: s.log, values: s.values}
	if s.next != nil {
		out.next = s.next.WithName(name)
	}
	return out
}
