// The controller-runtime peer of the benchmark worker (benches/src/worker.rs): the
// scenarios that compare whole operators, run by controller-runtime's cache and
// controller, speaking the worker's protocol (the same arguments, the same `synced`
// and `go` lines, the same JSON report as its last stdout line). A Go module of its own
// (go.mod, go.sum beside this file: sigs.k8s.io/controller-runtime v0.25.3, the newest
// release the Go module proxy serves, on client-go, k8s.io/api and k8s.io/apimachinery
// v0.37.2), built by `scripts/install-control-plane.sh --controller-runtime-peer`
// (which scripts/bench.sh runs) into the cache's bin/, where the driver looks for it.
//
//	controller-runtime-bench-peer --version
//	controller-runtime-bench-peer sync       controller-runtime <namespace>
//	controller-runtime-bench-peer controller controller-runtime <namespace> <objects> <updates> <tag>
//	controller-runtime-bench-peer backlog    controller-runtime <namespace> <objects> <edits> <tag>
//	controller-runtime-bench-peer footprint  controller-runtime <namespace> <objects> <tag>
//
// The configuration, controller-runtime's defaults but for two settings its docs
// suggest and one that keeps the runs apart:
//   - the cache strips managedFields before it holds an object: cache.Options
//     DefaultTransform = cache.TransformStripManagedFields(), as the docs of
//     TransformStripManagedFields advise for controllers that do not read them (ours
//     drops them by default too);
//   - the controller's queue is controller-runtime's priority queue, which v0.25 uses
//     by default (controller.Options.UsePriorityQueue, "enabled by default"): events
//     of the initial list and of resyncs that change nothing are queued at
//     handler.LowPriority, as ours queues them at Priority::LOW; UsePriorityQueue is
//     left unset;
//   - the manager's metrics server is off (metricsserver.Options BindAddress "0"; its
//     default listens on :8080): neither our worker nor kube-runtime's serves metrics,
//     and runs must not fight over a port.
//
// Everything else is a default: the rest.Config of ctrl.GetConfig (from KUBECONFIG,
// client-side rate limiting off), the cache's informers (client-go 0.37's: streaming
// lists, the RealFIFO; ConfigMaps in protobuf, controller-runtime's default for
// built-in types, the Parent custom resource in JSON), the client reading from the
// cache (deep copies), no leader election. 16 reconciles at once
// (MaxConcurrentReconciles), as on the other sides. Logs: errors only, to stderr.
//
// The Parent custom resource (group bench.informer.dev, version v1, a status
// subresource; benches/src/controller.rs has its Rust definition) is a small
// hand-written Go type (types.go), without code generation.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"informer.local/gopeer"
)

// Reconciles run at once, as on the other sides (benches/src/controller.rs WORKERS).
const workers = 16

// Status patches made before the backlog mode tells the driver to start its edits
// (benches/src/backlog.rs FIRST_PATCHES).
const firstPatches = 2 * workers

// How long the footprint mode idles after converging (benches/src/footprint.rs IDLE).
const idle = 3 * time.Second

// The only implementation this peer runs, as the driver names it.
const implementation = "controller-runtime"

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		// What the install script checks a built binary with: the build info names
		// the modules it links.
		fmt.Printf("controller-runtime-bench-peer (controller-runtime %s, client-go %s, %s)\n",
			gopeer.ModuleVersion("sigs.k8s.io/controller-runtime"), gopeer.ModuleVersion("k8s.io/client-go"), gopeer.GoVersion())
		return
	}
	if len(os.Args) < 4 {
		gopeer.Fail("usage: controller-runtime-bench-peer <sync|controller|backlog|footprint> controller-runtime <namespace> ...")
	}
	mode, side, namespace := os.Args[1], os.Args[2], os.Args[3]
	if side != implementation {
		gopeer.Fail("this peer runs controller-runtime, not %q", side)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	config, err := ctrl.GetConfig()
	if err != nil {
		gopeer.Fail("kubeconfig: %v", err)
	}
	arg := func(i int) string {
		if len(os.Args) <= i {
			gopeer.Fail("%s: missing argument %d", mode, i-1)
		}
		return os.Args[i]
	}
	count := func(i int) int {
		n, err := strconv.Atoi(arg(i))
		if err != nil {
			gopeer.Fail("%s: argument %d: %v", mode, i-1, err)
		}
		return n
	}
	var report map[string]any
	switch mode {
	case "sync":
		report = syncOnce(config, namespace)
	case "controller":
		report = controllerRun(config, namespace, count(4), count(5), arg(6))
	case "backlog":
		report = backlogRun(config, namespace, count(4), count(5), arg(6))
	case "footprint":
		report = footprintRun(config, namespace, count(4), arg(5))
	default:
		gopeer.Fail("unknown mode %q", mode)
	}
	line, _ := json.Marshal(report)
	fmt.Println(string(line))
	// Skip tearing down the cache and the controller: nothing is measured after this.
	os.Exit(0)
}

// The scheme of every mode: client-go's built-in types and the Parent type.
func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		gopeer.Fail("scheme: %v", err)
	}
	if err := addParentToScheme(scheme); err != nil {
		gopeer.Fail("scheme: %v", err)
	}
	return scheme
}

// The cache's options: namespace only, managedFields stripped.
func cacheOptions(scheme *runtime.Scheme, namespace string) cache.Options {
	return cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	}
}

// Scenarios 1 and 2: a cache of the ConfigMaps of namespace, as a manager's cache
// holds them, until synced. "synced" is the informer's HasSynced polled every
// millisecond (WaitForCacheSync polls every 100 ms), as in client-go's peer.
func syncOnce(config *rest.Config, namespace string) map[string]any {
	scheme := newScheme()
	ctx := context.Background()
	baseline := gopeer.Memory()
	mark := gopeer.Now()
	c, err := cache.New(config, cacheOptions(scheme, namespace))
	if err != nil {
		gopeer.Fail("cache: %v", err)
	}
	informer, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		gopeer.Fail("informer: %v", err)
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			gopeer.Fail("cache: %v", err)
		}
	}()
	for !informer.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	elapsed, cpu, user, sys := mark.Since()
	after := gopeer.Memory()
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		gopeer.Fail("list: %v", err)
	}
	return map[string]any{
		"kind": "sync", "implementation": implementation,
		"objects":        len(list.Items),
		"synced_seconds": elapsed, "cpu_seconds": cpu, "user_seconds": user, "sys_seconds": sys,
		"baseline_rss_kib": baseline.RSS, "peak_rss_kib": after.Peak, "rss_after_sync_kib": after.RSS,
	}
}

// What a scenario's reconciles report to (benches/src/controller.rs Observer).
type observer interface {
	// Called by every reconcile that found the parent's child: the status parent
	// should be given when it needs a patch, and false when it is current.
	wanted(tag string, parent *Parent, child *corev1.ConfigMap) (string, bool)
	// A reconcile patched parent's status to observed.
	patched(parent, observed string)
}

// The status parent should have given child ("{tag}:{value}") when it differs from
// the one it has, with the child's stamp (wall-clock nanoseconds) if it has one.
func statusWanted(tag string, parent *Parent, child *corev1.ConfigMap) (wanted string, stamp int64, stamped, ok bool) {
	value, found := child.Data["value"]
	if !found {
		return "", 0, false, false
	}
	wanted = tag + ":" + value
	if parent.Status != nil && parent.Status.Observed != nil && *parent.Status.Observed == wanted {
		return "", 0, false, false
	}
	stamp, err := strconv.ParseInt(child.Data["stamp"], 10, 64)
	return wanted, stamp, err == nil, true
}

// Milliseconds from stamp (wall-clock nanoseconds) to now.
func millisSince(stamp int64) float64 {
	return float64(max(time.Now().UnixNano()-stamp, 0)) / 1e6
}

// The reconciler: reads the parent and its child (spec.child) from the cache and
// patches the parent's status (a merge patch of status.observed, through the status
// subresource) when it differs, as the other sides do.
type reconciler struct {
	client   client.Client
	tag      string
	observer observer
}

func (r *reconciler) Reconcile(ctx context.Context, request ctrl.Request) (ctrl.Result, error) {
	var parent Parent
	if err := r.client.Get(ctx, request.NamespacedName, &parent); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var child corev1.ConfigMap
	key := types.NamespacedName{Namespace: request.Namespace, Name: parent.Spec.Child}
	if err := r.client.Get(ctx, key, &child); err != nil {
		// Not there yet: the child's arrival brings the parent back.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	wanted, ok := r.observer.wanted(r.tag, &parent, &child)
	if !ok {
		return ctrl.Result{}, nil
	}
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"observed": wanted}})
	if err := r.client.Status().Patch(ctx, &parent, client.RawPatch(types.MergePatchType, body)); err != nil {
		return ctrl.Result{}, err
	}
	r.observer.patched(parent.Name, wanted)
	return ctrl.Result{}, nil
}

// Starts a manager with the controller of the parents of namespace (owning their
// ConfigMap children), its reconciles wanting status.observed == "{tag}:{value}" and
// reporting to o.
func startController(config *rest.Config, namespace, tag string, o observer) {
	scheme := newScheme()
	manager, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:  scheme,
		Cache:   cacheOptions(scheme, namespace),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		gopeer.Fail("manager: %v", err)
	}
	err = ctrl.NewControllerManagedBy(manager).
		For(&Parent{}).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(&reconciler{client: manager.GetClient(), tag: tag, observer: o})
	if err != nil {
		gopeer.Fail("controller: %v", err)
	}
	go func() {
		if err := manager.Start(context.Background()); err != nil {
			gopeer.Fail("manager: %v", err)
		}
	}()
}

// Scenario 7's observer (benches/src/controller.rs Progress).
type progress struct {
	patches    atomic.Int64
	reconciles atomic.Int64
	mu         sync.Mutex
	latencies  []float64
}

func (p *progress) wanted(tag string, parent *Parent, child *corev1.ConfigMap) (string, bool) {
	p.reconciles.Add(1)
	wanted, stamp, stamped, ok := statusWanted(tag, parent, child)
	if !ok {
		return "", false
	}
	if stamped {
		millis := millisSince(stamp)
		p.mu.Lock()
		p.latencies = append(p.latencies, millis)
		p.mu.Unlock()
	}
	return wanted, true
}

func (p *progress) patched(string, string) { p.patches.Add(1) }

func (p *progress) waitForPatches(count int) {
	for p.patches.Load() < int64(count) {
		time.Sleep(5 * time.Millisecond)
	}
}

// Scenario 7: converge after start, say `synced`, wait for `go`, converge after the
// driver's updates (benches/src/controller.rs run).
func controllerRun(config *rest.Config, namespace string, objects, updates int, tag string) map[string]any {
	p := &progress{}
	baseline := gopeer.Memory()
	mark := gopeer.Now()
	startController(config, namespace, tag, p)
	p.waitForPatches(objects)
	convergeSeconds, convergeCPU, _, _ := mark.Since()
	convergeReconciles := p.reconciles.Load()
	p.mu.Lock()
	p.latencies = nil
	p.mu.Unlock()
	fmt.Println("synced")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		gopeer.Fail("stdin: %v", err)
	}
	if strings.TrimSpace(line) != "go" {
		gopeer.Fail("expected `go`, got %q", line)
	}
	mark = gopeer.Now()
	p.waitForPatches(objects + updates)
	updateSeconds, updateCPU, _, _ := mark.Since()
	updateReconciles := p.reconciles.Load() - convergeReconciles
	p.mu.Lock()
	latencies := p.latencies
	p.mu.Unlock()
	after := gopeer.Memory()
	return map[string]any{
		"kind": "controller", "implementation": implementation,
		"objects": objects, "updates": updates, "workers": workers,
		"converge_seconds": convergeSeconds, "converge_cpu_seconds": convergeCPU,
		"converge_reconciles": convergeReconciles,
		"update_seconds":      updateSeconds, "update_cpu_seconds": updateCPU,
		"update_reconciles": updateReconciles,
		"latency_p50_ms":    jsonNumber(median(latencies)),
		"latency_p99_ms":    jsonNumber(percentile(latencies, 0.99)),
		"latencies":         len(latencies),
		"baseline_rss_kib":  baseline.RSS, "peak_rss_kib": after.Peak,
	}
}

// An edit the reconciles saw (benches/src/backlog.rs Seen).
type seen struct {
	stamp  int64
	millis float64
}

// Scenario 12's observer (benches/src/backlog.rs Backlog).
type backlog struct {
	editPrefix   string
	reconciles   atomic.Int64
	mu           sync.Mutex
	patchedSet   map[string]struct{}
	seen         map[string]seen
	editsPatched map[string]struct{}
}

func newBacklog(tag string) *backlog {
	return &backlog{
		editPrefix:   tag + "-",
		patchedSet:   map[string]struct{}{},
		seen:         map[string]seen{},
		editsPatched: map[string]struct{}{},
	}
}

// Records the first sighting of each of this run's edits.
func (b *backlog) wanted(tag string, parent *Parent, child *corev1.ConfigMap) (string, bool) {
	b.reconciles.Add(1)
	wanted, stamp, stamped, ok := statusWanted(tag, parent, child)
	if !ok {
		return "", false
	}
	if value, found := child.Data["value"]; found && stamped && strings.HasPrefix(value, b.editPrefix) {
		millis := millisSince(stamp)
		b.mu.Lock()
		if _, already := b.seen[value]; !already {
			b.seen[value] = seen{stamp: stamp, millis: millis}
		}
		b.mu.Unlock()
	}
	return wanted, true
}

func (b *backlog) patched(parent, observed string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.patchedSet[parent] = struct{}{}
	// observed is "{tag}:{value}"; the tag holds no ':'.
	if _, value, found := strings.Cut(observed, ":"); found && strings.HasPrefix(value, b.editPrefix) {
		b.editsPatched[value] = struct{}{}
	}
}

// Scenario 12: start with a new tag, say `synced` after the first patches, run until
// every parent converged (benches/src/backlog.rs run).
func backlogRun(config *rest.Config, namespace string, objects, edits int, tag string) map[string]any {
	b := newBacklog(tag)
	mark := gopeer.Now()
	started := time.Now().UnixNano()
	startController(config, namespace, tag, b)
	type point struct {
		when    int64
		patched int
	}
	var timeline []point
	told := false
	firstPatchesSeconds := 0.0
	for {
		b.mu.Lock()
		patched, editsPatched := len(b.patchedSet), len(b.editsPatched)
		b.mu.Unlock()
		timeline = append(timeline, point{time.Now().UnixNano(), patched})
		if !told && patched >= min(firstPatches, objects) {
			firstPatchesSeconds, _, _, _ = mark.Since()
			fmt.Println("synced")
			told = true
		}
		if patched >= objects && editsPatched >= edits {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	convergeSeconds, convergeCPU, _, _ := mark.Since()
	reconciles := b.reconciles.Load()
	b.mu.Lock()
	var latencies []float64
	var firstStamp, lastStamp int64
	for _, s := range b.seen {
		latencies = append(latencies, s.millis)
		if firstStamp == 0 || s.stamp < firstStamp {
			firstStamp = s.stamp
		}
		lastStamp = max(lastStamp, s.stamp)
	}
	b.mu.Unlock()
	if len(latencies) == 0 {
		gopeer.Fail("no edit seen")
	}
	// Parents not yet patched at stamp: as of the last look before it.
	backlogAt := func(stamp int64) int {
		at := sort.Search(len(timeline), func(i int) bool { return timeline[i].when > stamp })
		return objects - min(timeline[max(at-1, 0)].patched, objects)
	}
	sinceStart := func(stamp int64) float64 { return float64(max(stamp-started, 0)) / 1e9 }
	maxLatency := latencies[0]
	for _, l := range latencies {
		maxLatency = max(maxLatency, l)
	}
	return map[string]any{
		"kind": "backlog", "implementation": implementation,
		"objects": objects, "edits": edits, "workers": workers,
		"first_patches_seconds": firstPatchesSeconds,
		"first_edit_seconds":    sinceStart(firstStamp),
		"last_edit_seconds":     sinceStart(lastStamp),
		"backlog_at_first_edit": backlogAt(firstStamp),
		"backlog_at_last_edit":  backlogAt(lastStamp),
		"converge_seconds":      convergeSeconds, "converge_cpu_seconds": convergeCPU,
		"reconciles":     reconciles,
		"latency_p50_ms": median(latencies), "latency_p99_ms": percentile(latencies, 0.99),
		"latency_max_ms": maxLatency, "latencies": len(latencies),
		"peak_rss_kib": gopeer.Memory().Peak,
	}
}

// Scenario 13's observer (benches/src/footprint.rs Footprint): the parents patched.
type footprint struct {
	mu         sync.Mutex
	patchedSet map[string]struct{}
}

func (f *footprint) wanted(tag string, parent *Parent, child *corev1.ConfigMap) (string, bool) {
	wanted, _, _, ok := statusWanted(tag, parent, child)
	return wanted, ok
}

func (f *footprint) patched(parent, _ string) {
	f.mu.Lock()
	f.patchedSet[parent] = struct{}{}
	f.mu.Unlock()
}

// Scenario 13: converge, idle, then measure (benches/src/footprint.rs run).
func footprintRun(config *rest.Config, namespace string, objects int, tag string) map[string]any {
	f := &footprint{patchedSet: map[string]struct{}{}}
	baseline := gopeer.Memory()
	baselineThreads := gopeer.Status()["Threads:"]
	mark := gopeer.Now()
	startController(config, namespace, tag, f)
	for {
		f.mu.Lock()
		patched := len(f.patchedSet)
		f.mu.Unlock()
		if patched >= objects {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	convergeSeconds, _, _, _ := mark.Since()
	time.Sleep(idle)
	fields := gopeer.Status()
	_, cpu, _, _ := mark.Since()
	return map[string]any{
		"kind": "footprint", "implementation": implementation,
		"objects":          objects,
		"baseline_rss_kib": baseline.RSS, "baseline_threads": baselineThreads,
		"converge_seconds": convergeSeconds, "idle_seconds": idle.Seconds(),
		"idle_rss_kib": fields["VmRSS:"], "idle_rss_anon_kib": fields["RssAnon:"],
		"idle_rss_file_kib": fields["RssFile:"], "peak_rss_kib": fields["VmHWM:"],
		"threads": fields["Threads:"], "thread_names": threadNames(),
		"cpu_seconds": cpu,
	}
}

// The median (the mean of the two middle values for an even count); NaN when empty.
func median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	mid := len(sorted) / 2
	if len(sorted)%2 == 0 {
		return (sorted[mid-1] + sorted[mid]) / 2
	}
	return sorted[mid]
}

// The q quantile of values (nearest rank); NaN when empty.
func percentile(values []float64, q float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	rank := min(max(int(math.Ceil(q*float64(len(sorted)))), 1), len(sorted))
	return sorted[rank-1]
}

// A figure for the JSON report: encoding/json refuses NaN, which the Rust side reads
// as null (serde) and then as NaN.
func jsonNumber(x float64) any {
	if math.IsNaN(x) {
		return nil
	}
	return x
}

// The names of this process's threads (/proc/self/task/*/comm), sorted.
func threadNames() []string {
	tasks, _ := os.ReadDir("/proc/self/task")
	names := []string{}
	for _, task := range tasks {
		if comm, err := os.ReadFile("/proc/self/task/" + task.Name() + "/comm"); err == nil {
			names = append(names, strings.TrimSpace(string(comm)))
		}
	}
	sort.Strings(names)
	return names
}
