// Package main is sockhold: it opens N TCP sockets on loopback (N/2 connections, both
// ends, plus one listener) and holds them until killed: the load of
// scripts/bench-exporter.sh. It prints "ready" when all are open.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	n := flag.Int("n", 10000, "sockets to hold (connected ends; even)")
	flag.Parse()
	if err := hold(*n / 2); err != nil {
		fmt.Fprintln(os.Stderr, "sockhold:", err)
		os.Exit(1)
	}
}

func hold(conns int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	accepted := make(chan net.Conn, conns)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	held := make([]net.Conn, 0, 2*conns)
	for i := range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		held = append(held, c, <-accepted)
	}
	fmt.Println("ready", len(held))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}
