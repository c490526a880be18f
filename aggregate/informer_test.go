package aggregate

import (
	"context"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// A client-go informer through edge: it lists, watches, takes bookmarks (its last synced
// version moves on) and relists after a 410.
func TestInformerThroughEdge(t *testing.T) {
	f := newFixture(t, nil, "c1", "c2")
	f.srv.Close()
	tlsSrv := httptest.NewTLSServer(f.proxy)
	defer tlsSrv.Close()
	f.members["c1"].add("ns", "a")
	f.members["c2"].add("ns", "b")

	client, err := kubernetes.NewForConfig(&rest.Config{Host: tlsSrv.URL + "/k8s", BearerToken: "alice-token",
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		p := obj.(*corev1.Pod)
		mu.Lock()
		defer mu.Unlock()
		seen[p.Name] = p.Annotations[ClusterAnnotation]
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		t.Fatal("no sync")
	}
	has := func(name, cluster string) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return seen[name] == cluster }
	}
	poll.Until(t, 20*time.Second, "the listed pods", func() bool { return has("a", "c1")() && has("b", "c2")() })

	f.members["c2"].add("ns", "c")
	poll.Until(t, 20*time.Second, "a watched pod", has("c", "c2"))

	mark := f.members["c1"].bookmark()
	poll.Until(t, 20*time.Second, "the bookmark's version", func() bool {
		g, _, err := decodeRV(pods.LastSyncResourceVersion())
		return err == nil && g["c1"] == strconv.Itoa(mark)
	})

	lists := func() int {
		n := 0
		for _, r := range f.members["c1"].requests() {
			if r.URL.Query().Get("watch") == "" && r.URL.Path == "/api/v1/pods" {
				n++
			}
		}
		return n
	}
	before := lists()
	f.members["c1"].add("ns", "d")
	poll.Until(t, 20*time.Second, "the pod before compaction", has("d", "c1"))
	// History moves on unseen and is compacted past every version the informer knows; its
	// watch ends, and its next watch from its last version gets 410.
	c1 := f.members["c1"]
	c1.mu.Lock()
	c1.rv += 5
	c1.mu.Unlock()
	c1.compact()
	c1.endWatches()
	poll.Until(t, 20*time.Second, "a relist after the 410", func() bool { return lists() > before })
	f.members["c1"].add("ns", "e")
	poll.Until(t, 20*time.Second, "a pod after the relist", has("e", "c1"))
}
