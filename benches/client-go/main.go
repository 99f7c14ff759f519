// The client-go peer of the benchmark worker (benches/src/worker.rs): the same
// scenarios, run by a client-go SharedInformerFactory informer, reporting the same
// JSON line. Built from the Kubernetes source tree the control-plane install unpacks
// (its vendored client-go, the version of the test server) by
// `scripts/install-control-plane.sh --client-go-peer` (which scripts/bench.sh runs): it
// copies this file to cmd/client-go-bench-peer/, runs make WHAT=cmd/client-go-bench-peer
// and installs the binary into the cache's bin/, where the driver looks for it.
//
//	client-go-bench-peer sync   <json|protobuf> <namespace>
//	client-go-bench-peer watch  <json|protobuf> <namespace>
//	client-go-bench-peer relist <json|protobuf> <namespace>
//	client-go-bench-peer sync-pods-transform <json|protobuf> <namespace>
//
// "synced" is HasSynced polled every millisecond, not WaitForCacheSync's 100 ms poll,
// so that the time does not round up.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientversion "k8s.io/client-go/pkg/version"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		// What the install script checks a cached binary with. The Kubernetes build
		// stamps its version into the vendored client-go.
		fmt.Printf("client-go-bench-peer (client-go of Kubernetes %s)\n", clientversion.Get().GitVersion)
		return
	}
	if len(os.Args) != 4 {
		fail("usage: client-go-bench-peer <sync|watch|relist|sync-pods-transform> <json|protobuf> <namespace>")
	}
	mode, encoding, namespace := os.Args[1], os.Args[2], os.Args[3]
	config, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		fail("kubeconfig: %v", err)
	}
	implementation := "client-go-json"
	switch encoding {
	case "json":
	case "protobuf":
		config.ContentType = "application/vnd.kubernetes.protobuf"
		config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		implementation = "client-go-protobuf"
	default:
		fail("unknown encoding %q", encoding)
	}
	// The benchmark measures the informer, not client-side throttling.
	config.QPS, config.Burst = 1e6, 1e6
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail("client: %v", err)
	}
	var report map[string]interface{}
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
		fail("unknown mode %q", mode)
	}
	line, _ := json.Marshal(report)
	fmt.Println(string(line))
	// Skip tearing down the cache: nothing is measured after this point.
	os.Exit(0)
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "client-go-bench-peer: "+format+"\n", args...)
	os.Exit(1)
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
	for !i.shared.HasSynced() {
		time.Sleep(time.Millisecond)
	}
}

// Scenarios 1 and 2.
func syncOnce(client kubernetes.Interface, namespace, implementation string) map[string]interface{} {
	baseline := memory()
	mark := now()
	i := start(client, namespace, nil)
	i.waitForSync()
	elapsed, cpu, user, sys := mark.since()
	after := memory()
	return map[string]interface{}{
		"kind": "sync", "implementation": implementation,
		"objects":        len(i.shared.GetStore().ListKeys()),
		"synced_seconds": elapsed, "cpu_seconds": cpu, "user_seconds": user, "sys_seconds": sys,
		"baseline_rss_kib": baseline.rss, "peak_rss_kib": after.peak, "rss_after_sync_kib": after.rss,
	}
}

// Scenario 3: sync, then follow the driver's updates until `go <name> <value>`'s
// value shows on object name, looking every 5 ms.
func watch(client kubernetes.Interface, namespace, implementation string) map[string]interface{} {
	i := start(client, namespace, nil)
	i.waitForSync()
	fmt.Println("synced")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		fail("stdin: %v", err)
	}
	mark := now()
	words := strings.Fields(line)
	if len(words) != 3 || words[0] != "go" {
		fail("expected `go <name> <value>`, got %q", line)
	}
	key := namespace + "/" + words[1]
	for {
		object, exists, _ := i.shared.GetStore().GetByKey(key)
		if exists && object.(*corev1.ConfigMap).Data["rev"] == words[2] {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed, cpu, _, _ := mark.since()
	after := memory()
	return map[string]interface{}{
		"kind": "watch", "implementation": implementation,
		"seconds": elapsed, "cpu_seconds": cpu, "peak_rss_kib": after.peak, "rss_kib": after.rss,
	}
}

// Scenario 6: 2-second watches; after the sync, waits until the relist that follows
// the 410 Gone the driver brings about has been applied. client-go 1.20's reflector
// handles a watch that ends in 410 Gone inside ListAndWatch (it relists at once, from
// etcd) without telling the watch error handler, so the relist is seen as it is
// applied: the last synced resourceVersion moves, which nothing else moves here (no
// object of the namespace changes, and without the watch cache there are no bookmarks).
func relist(client kubernetes.Interface, namespace, implementation string) map[string]interface{} {
	timeout := int64(2)
	i := start(client, namespace, func(options *metav1.ListOptions) {
		// The tweak runs before the typed client sets Watch, so a watch is told by
		// the timeout the reflector gives only its watches (5 to 10 minutes).
		if options.TimeoutSeconds != nil {
			options.TimeoutSeconds = &timeout
		}
	})
	i.waitForSync()
	synced := i.shared.LastSyncResourceVersion()
	after := memory()
	fmt.Println("synced")
	resetPeak()
	mark := now()
	deadline := time.Now().Add(2 * time.Minute)
	for i.shared.LastSyncResourceVersion() == synced {
		if time.Now().After(deadline) {
			fail("no relist within two minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, cpu, _, _ := mark.since()
	peak := memory()
	return map[string]interface{}{
		"kind": "relist", "implementation": implementation,
		"objects":            len(i.shared.GetStore().ListKeys()),
		"rss_after_sync_kib": after.rss, "peak_rss_kib": peak.peak, "cpu_seconds": cpu,
	}
}

// Scenario 15: the Pods of namespace, each decoded whole and then cut down to the
// fields of the benchmark's projection (name, namespace, uid, resourceVersion,
// labels, owner references, node, phase, container images) before the cache holds
// it: what SetTransform does from client-go 1.24 on. This client-go (1.20's) has no
// SetTransform, so the same cut is made where a controller made it before: in the
// ListWatch, on every listed item and every watch event.
func syncPodsTransform(client kubernetes.Interface, namespace, implementation string) map[string]interface{} {
	baseline := memory()
	mark := now()
	pods := client.CoreV1().Pods(namespace)
	listWatch := &cache.ListWatch{
		ListFunc: func(options metav1.ListOptions) (runtime.Object, error) {
			list, err := pods.List(context.TODO(), options)
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				list.Items[i] = *cut(&list.Items[i])
			}
			return list, nil
		},
		WatchFunc: func(options metav1.ListOptions) (kwatch.Interface, error) {
			w, err := pods.Watch(context.TODO(), options)
			if err != nil {
				return nil, err
			}
			return kwatch.Filter(w, func(event kwatch.Event) (kwatch.Event, bool) {
				if pod, ok := event.Object.(*corev1.Pod); ok {
					event.Object = cut(pod)
				}
				return event, true
			}), nil
		},
	}
	shared := cache.NewSharedIndexInformer(listWatch, &corev1.Pod{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	stop := make(chan struct{})
	go shared.Run(stop)
	for !shared.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	elapsed, cpu, user, sys := mark.since()
	after := memory()
	return map[string]interface{}{
		"kind": "sync", "implementation": implementation,
		"objects":        len(shared.GetStore().ListKeys()),
		"synced_seconds": elapsed, "cpu_seconds": cpu, "user_seconds": user, "sys_seconds": sys,
		"baseline_rss_kib": baseline.rss, "peak_rss_kib": after.peak, "rss_after_sync_kib": after.rss,
	}
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

type mark struct {
	wall time.Time
	user time.Duration
	sys  time.Duration
}

func now() mark {
	user, sys := rusage()
	return mark{wall: time.Now(), user: user, sys: sys}
}

// Seconds of wall time, CPU (user + sys), user and sys since the mark.
func (m mark) since() (float64, float64, float64, float64) {
	user, sys := rusage()
	u, s := (user - m.user).Seconds(), (sys - m.sys).Seconds()
	return time.Since(m.wall).Seconds(), u + s, u, s
}

func rusage() (time.Duration, time.Duration) {
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return time.Duration(usage.Utime.Nano()), time.Duration(usage.Stime.Nano())
}

type mem struct{ rss, peak uint64 }

// VmRSS and VmHWM of this process, KiB.
func memory() mem {
	status, _ := os.ReadFile("/proc/self/status")
	var m mem
	for _, line := range strings.Split(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		value, _ := strconv.ParseUint(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			m.rss = value
		case "VmHWM:":
			m.peak = value
		}
	}
	return m
}

// Resets VmHWM to the current RSS.
func resetPeak() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
