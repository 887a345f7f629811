package main

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

func TestAwaitBlocked(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	t.Run("nothing answers: serve at once", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if err := awaitBlocked(t.Context(), addr, time.Minute, log); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("answers until the policy holds", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// The "policy" comes into force after the third connection.
		go func() {
			for i := 0; i < 3; i++ {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
			ln.Close()
		}()
		if err := awaitBlocked(t.Context(), ln.Addr().String(), 10*time.Minute, log); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("never blocked: refuse to serve", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		err = awaitBlocked(t.Context(), ln.Addr().String(), 0, log)
		if !errors.Is(err, errNotBlocked) {
			t.Fatalf("err = %v, want errNotBlocked", err)
		}
	})
}
