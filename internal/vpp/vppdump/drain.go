package vppdump

import (
	"errors"
	"fmt"
	"io"
)

// Drain reads a dump stream (its Recv) to its end, handing each record to use. A stream that
// breaks before its end is an error naming what was being dumped; the records read until then
// have been handed on.
func Drain[T any](recv func() (T, error), what string, use func(T)) error {
	for {
		record, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("dumping %s: %w", what, err)
		}
		use(record)
	}
}
