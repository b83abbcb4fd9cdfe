package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A publisher whose brokers accept connections and never answer returns
// from Flush and Close by their context's deadline, saying its counts were
// not published, and names what it could not publish; Close does not wait
// for a background publish stuck on those brokers either.
func TestPublisherCloseBoundedWhenBrokersHang(t *testing.T) {
	env := audittest.Start(t) // for the registry only
	addr := testenv.HangingBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: cl, Registry: env.Registry, Host: "fe-1", FlushInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w := time.Now().Add(-time.Hour)
	pub.CountN("pageview", w, "fe-1", 42)
	time.Sleep(300 * time.Millisecond) // a background publish of the closed window is under way

	for name, f := range map[string]func(context.Context) error{"Flush": pub.Flush, "Close": pub.Close} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		err := f(ctx)
		took := time.Since(start)
		cancel()
		if err == nil || took > 3*time.Second {
			t.Errorf("%s with hanging brokers: returned %v after %v; want an error within about 2 s", name, err, took.Round(time.Millisecond))
		}
	}
	if un := pub.Unpublished(); len(un) != 1 || un[0].Topic != "pageview" || un[0].N != 42 || !un[0].Window.Equal(audit.WindowStart(w, audit.DefaultWindow)) {
		t.Errorf("unpublished counts: %+v; want 42 events of pageview in their window", un)
	}
}
