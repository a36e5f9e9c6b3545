package budget

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/state"
)

func TestPriceCost(t *testing.T) {
	p := Price{Input: 2, CachedInput: 0.5, Output: 8}
	for _, tc := range []struct {
		prompt, cached, completion, want int64
	}{
		{1000, 400, 100, 2_200_000}, // 600×2 + 400×0.5 + 100×8 = 2200 µ$
		{1000, 0, 0, 2_000_000},
		{1000, 5000, 0, 500_000}, // cached beyond the prompt is the prompt
		{0, 0, 1, 8_000},
		{1, 0, 0, 2_000},
	} {
		if got := p.Cost(tc.prompt, tc.cached, tc.completion); got != tc.want {
			t.Errorf("Cost(%d, %d, %d) = %d nano-dollars, want %d", tc.prompt, tc.cached, tc.completion, got, tc.want)
		}
	}
	if Nano(0.0066) != 6_600_000 || Nano(1e-9) != 1 || USD(2_200_000) != 0.0022 {
		t.Errorf("conversions: %d %d %v", Nano(0.0066), Nano(1e-9), USD(2_200_000))
	}
}

func TestPeriodSpan(t *testing.T) {
	at := time.Date(2026, 12, 31, 22, 30, 0, 0, time.FixedZone("x", 3600)) // 21:30 UTC
	if name, left := Day.span(at); name != "cost:2026-12-31" || left != 150*time.Minute {
		t.Errorf("day: %s %v", name, left)
	}
	if name, left := Month.span(at); name != "cost:2026-12" || left != 150*time.Minute {
		t.Errorf("month: %s %v", name, left)
	}
	if name, left := Month.span(time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)); name != "cost:2027-02" || left != 28*24*time.Hour {
		t.Errorf("february: %s %v", name, left)
	}
}

// Spend is checked at admission and counted after: refused once the
// period's spend reaches the limit, admitted one nano-dollar below it.
func TestSpendAdmission(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := state.NewMemoryCounters(0, func() time.Time { return now })
	a := Admission{Key: "k", Spend: Spend{Max: 1000, Period: Day}, Now: now}
	if err := AddCost(ctx, s, Cost{Key: "k", Period: Day, At: now, Nano: 999}); err != nil {
		t.Fatal(err)
	}
	adm, err := Admit(ctx, s, a)
	if err != nil || len(adm.Rates()) != 1 || adm.Rates()[0].Used != 999 || adm.Rates()[0].Limit != MaxCost {
		t.Fatalf("one below the limit: %v %+v", err, adm.Rates())
	}
	_ = AddCost(ctx, s, Cost{Key: "k", Period: Day, At: now, Nano: 1})
	_, err = Admit(ctx, s, a)
	if le, ok := err.(*LimitError); !ok || le.Limit != MaxCost || le.Got != 1000 || le.RetryAfter != 12*time.Hour {
		t.Fatalf("at the limit: %v", err)
	}
	a.Now = now.Add(12 * time.Hour)
	if _, err := Admit(ctx, s, a); err != nil {
		t.Fatalf("the next day: %v", err)
	}
}
