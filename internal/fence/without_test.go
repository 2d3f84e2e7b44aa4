package fence

import (
	"context"
	"errors"
	"testing"
)

type lost struct{}

func (lost) Check() error { return errors.New("lease lost") }

func TestWithout(t *testing.T) {
	ctx := WithContext(context.Background(), lost{})
	if Check(ctx) == nil {
		t.Fatal("fenced context: Check passed")
	}
	if err := Check(Without(ctx)); err != nil {
		t.Fatalf("Without: Check = %v, want nil", err)
	}
	if Check(WithContext(Without(ctx), lost{})) == nil {
		t.Fatal("fenced again after Without: Check passed")
	}
}
