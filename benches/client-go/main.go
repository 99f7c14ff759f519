// The client-go peer of the benchmark worker (benches/src/worker.rs): the same
// scenarios, run by a client-go SharedInformerFactory informer, reporting the same
// JSON line. A Go module of its own (go.mod, go.sum beside this file: client-go,
// k8s.io/api and k8s.io/apimachinery v0.37.2, the newest release the Go module proxy
// serves), built by `scripts/install-control-plane.sh --client-go-peer` (which
// scripts/bench.sh runs) into the cache's bin/, where the driver looks for it.
//
//	client-go-bench-peer --version
//	client-go-bench-peer sync   <json|protobuf> <namespace>
//	client-go-bench-peer watch  <json|protobuf> <namespace>
//	client-go-bench-peer relist <json|protobuf> <namespace>
//	client-go-bench-peer sync-pods-transform <json|protobuf> <namespace>
//
// client-go's defaults, as of 0.37 (k8s.io/client-go@v0.37.2/features/known_features.go),
// none of them changed here:
//   - WatchListClient (beta, on by default since 1.35): every (re)sync is a streaming
//     list, one watch with sendInitialEvents=true whose initial events end with a
//     bookmark, and that watch goes on as the informer's watch; a plain paged LIST
//     only when the server refuses it. The control plane (1.37) serves streaming lists
//     with its watch cache and without it (scenario 6).
//   - InOrderInformers (GA in 1.36, locked on): the informer's queue is the RealFIFO;
//     AtomicFIFO (beta, on since 1.36) applies a relist to the cache as one batch, and
//     UnlockWhileProcessingFIFO (beta, on since 1.36) lets the reflector queue while a
//     batch is processed; InOrderInformersBatchProcess (beta, on since 1.35).
//   - The typed clients of built-in types ask for protobuf when the configuration
//     names no content type (gentype.PrefersProtobuf): protobuf is client-go 0.37's
//     default for ConfigMaps and Pods. Both encodings are set explicitly below, so
//     that "json" is JSON and "protobuf" stays protobuf whatever a later default.
//
// "synced" is HasSynced polled every millisecond, not WaitForCacheSync's 100 ms poll,
// so that the time does not round up.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"informer.local/gopeer"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		// What the install script checks a built binary with. Nothing stamps a version
		// into a module build; the build info names the client-go module it links.
		fmt.Printf("client-go-bench-peer (client-go %s, %s)\n", gopeer.ModuleVersion("k8s.io/client-go"), gopeer.GoVersion())
		return
	}
	if len(os.Args) != 4 {
		gopeer.Fail("usage: client-go-bench-peer <sync|watch|relist|sync-pods-transform> <json|protobuf> <namespace>")
	}
	mode, encoding, namespace := os.Args[1], os.Args[2], os.Args[3]
	config, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		gopeer.Fail("kubeconfig: %v", err)
	}
	implementation := "client-go-json"
	switch encoding {
	case "json":
		config.ContentType = "application/json"
		config.AcceptContentTypes = "application/json"
	case "protobuf":
		config.ContentType = "application/vnd.kubernetes.protobuf"
		config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		implementation = "client-go-protobuf"
	default:
		gopeer.Fail("unknown encoding %q", encoding)
	}
	// The benchmark measures the informer, not client-side throttling.
	config.QPS, config.Burst = 1e6, 1e6
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		gopeer.Fail("client: %v", err)
	}
	var report map[string]any
	switch mode {
	case "sync":
		report = syncOnce(client, namespace, implementation)
	case "watch":
		report = watch(client, namespace, implementation)
	case "relist":
		report = relist(client, namespace, implementation)
	case "sync-pods-transform":
		report = syncPodsTransform(client, namespace, implementation)
	default:
		gopeer.Fail("unknown mode %q", mode)
	}
	line, _ := json.Marshal(report)
	fmt.Println(string(line))
	// Skip tearing down the cache: nothing is measured after this point.
	os.Exit(0)
}

// An informer on the ConfigMaps of namespace, as a controller gets it from a factory.
type informer struct {
	shared cache.SharedIndexInformer
	stop   chan struct{}
}

func start(client kubernetes.Interface, namespace string, tweak func(*metav1.ListOptions)) informer {
	options := []informers.SharedInformerOption{informers.WithNamespace(namespace)}
	if tweak != nil {
		options = append(options, informers.WithTweakListOptions(tweak))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, options...)
	shared := factory.Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	return informer{shared: shared, stop: stop}
}

func (i informer) waitForSync() {
	waitForSync(i.shared)
}

func waitForSync(shared cache.SharedIndexInformer) {
	for !shared.HasSynced() {
		time.Sleep(time.Millisecond)
	}
}

// Scenarios 1, 2 and 8.
func syncOnce(client kubernetes.Interface, namespace, implementation string) map[string]any {
	baseline := gopeer.Memory()
	mark := gopeer.Now()
	i := start(client, namespace, nil)
	i.waitForSync()
	return syncReport(implementation, i.shared, baseline, mark)
}

// The report of a sync that started at mark with RSS baseline and just synced.
func syncReport(implementation string, shared cache.SharedIndexInformer, baseline gopeer.Mem, mark gopeer.Mark) map[string]any {
	elapsed, cpu, user, sys := mark.Since()
	after := gopeer.Memory()
	return map[string]any{
		"kind": "sync", "implementation": implementation,
		"objects":        len(shared.GetStore().ListKeys()),
		"synced_seconds": elapsed, "cpu_seconds": cpu, "user_seconds": user, "sys_seconds": sys,
		"baseline_rss_kib": baseline.RSS, "peak_rss_kib": after.Peak, "rss_after_sync_kib": after.RSS,
	}
}

// Scenario 3: sync, then follow the driver's updates until `go <name> <value>`'s
// value shows on object name, looking every 5 ms.
func watch(client kubernetes.Interface, namespace, implementation string) map[string]any {
	i := start(client, namespace, nil)
	i.waitForSync()
	fmt.Println("synced")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		gopeer.Fail("stdin: %v", err)
	}
	mark := gopeer.Now()
	words := strings.Fields(line)
	if len(words) != 3 || words[0] != "go" {
		gopeer.Fail("expected `go <name> <value>`, got %q", line)
	}
	key := namespace + "/" + words[1]
	for {
		object, exists, _ := i.shared.GetStore().GetByKey(key)
		if exists && object.(*corev1.ConfigMap).Data["rev"] == words[2] {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed, cpu, _, _ := mark.Since()
	after := gopeer.Memory()
	return map[string]any{
		"kind": "watch", "implementation": implementation,
		"seconds": elapsed, "cpu_seconds": cpu, "peak_rss_kib": after.Peak, "rss_kib": after.RSS,
	}
}

// Scenario 6: 2-second watches; after the sync, waits until the relist that follows
// the 410 Gone the driver brings about has been applied.
//
// What client-go 0.37's reflector does (tools/cache/reflector.go): the sync is a
// streaming list (WatchListClient), whose watch goes on after its initial events;
// every 2 s that watch ends and the next starts at LastSyncResourceVersion. Once the
// driver has compacted etcd past it, the next watch ends in 410 Gone: watch() returns,
// ListAndWatch returns without an error (so the watch error handler is not told), and
// the next ListAndWatch is a new streaming list, at the last resourceVersion (not
// older than), which the server without watch cache serves from etcd at its current
// revision (k8s.io/apiserver@v0.37.2/pkg/storage/etcd3/watcher.go). Its end bookmark
// carries that revision, past the driver's writes elsewhere, and watchList() sets
// LastSyncResourceVersion to it after handing the objects to the queue
// (store.Replace). Nothing else moves that version
// here: no object of the namespace changes, and without the watch cache the server
// sends no bookmarks but the initial-events-end one. So the relist is seen when
// LastSyncResourceVersion moves; the worker then waits 500 ms, as the Rust worker
// does, for the queue to apply the replace (the RealFIFO pops it as one batch).
func relist(client kubernetes.Interface, namespace, implementation string) map[string]any {
	timeout := int64(2)
	i := start(client, namespace, func(options *metav1.ListOptions) {
		// Only watches (streaming lists included) come with a timeout: the reflector
		// gives each a random 5 to 10 minutes; lists (the fallback) have none.
		if options.TimeoutSeconds != nil {
			options.TimeoutSeconds = &timeout
		}
	})
	i.waitForSync()
	synced := i.shared.LastSyncResourceVersion()
	after := gopeer.Memory()
	fmt.Println("synced")
	gopeer.ResetPeak()
	mark := gopeer.Now()
	deadline := time.Now().Add(2 * time.Minute)
	for i.shared.LastSyncResourceVersion() == synced {
		if time.Now().After(deadline) {
			gopeer.Fail("no relist within two minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Let the relist's replace be applied (and the replaced objects dropped).
	time.Sleep(500 * time.Millisecond)
	_, cpu, _, _ := mark.Since()
	peak := gopeer.Memory()
	return map[string]any{
		"kind": "relist", "implementation": implementation,
		"objects":            len(i.shared.GetStore().ListKeys()),
		"rss_after_sync_kib": after.RSS, "peak_rss_kib": peak.Peak, "cpu_seconds": cpu,
	}
}

// Scenario 15: the Pods of namespace from a factory's Pod informer, each cut down to
// the fields of the benchmark's projection (name, namespace, uid, resourceVersion,
// labels, owner references, node, phase, container images) before the cache holds it,
// by a transform set with SharedIndexInformer.SetTransform before the factory starts,
// the way client-go's users do it (since 1.24). client-go applies it to every object
// the reflector hands over (the streaming list's initial events as they arrive, and
// every watch event), before the queue and the cache.
func syncPodsTransform(client kubernetes.Interface, namespace, implementation string) map[string]any {
	baseline := gopeer.Memory()
	mark := gopeer.Now()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	shared := factory.Core().V1().Pods().Informer()
	if err := shared.SetTransform(func(object any) (any, error) {
		if pod, ok := object.(*corev1.Pod); ok {
			return cut(pod), nil
		}
		return object, nil // a tombstone: its object was cut already
	}); err != nil {
		gopeer.Fail("SetTransform: %v", err)
	}
	factory.Start(make(chan struct{}))
	waitForSync(shared)
	return syncReport(implementation, shared, baseline, mark)
}

// A new Pod with only the projected fields of pod (the old one is left to the GC).
func cut(pod *corev1.Pod) *corev1.Pod {
	containers := make([]corev1.Container, len(pod.Spec.Containers))
	for i, c := range pod.Spec.Containers {
		containers[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion, Generation: pod.Generation,
			Labels: pod.Labels, OwnerReferences: pod.OwnerReferences,
			DeletionTimestamp: pod.DeletionTimestamp, Finalizers: pod.Finalizers,
		},
		Spec:   corev1.PodSpec{NodeName: pod.Spec.NodeName, Containers: containers},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
}
