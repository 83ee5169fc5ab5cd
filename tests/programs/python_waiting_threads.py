"""Daemon threads waiting as the program exits, each in a call whose early end it would print:
accept and recv on sockets with a timeout (Python waits in poll), a selector (epoll), a queue (a
futex) and sleep. Under tleak, whose exit scan stops each thread for a moment to read its
registers, the program's output is its own: "main exiting" alone, exit status 0. A list of
bytearrays the main thread keeps is reachable at exit."""
import queue
import selectors
import socket
import threading
import time


def acceptor():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    s.settimeout(30)
    try:
        s.accept()
        print("accept returned")
    except Exception as e:  # a timeout, or an interrupted call
        print("accept raised", type(e).__name__)


def receiver():
    a, b = socket.socketpair()
    a.settimeout(30)
    try:
        a.recv(1)
        print("recv returned")
    except Exception as e:
        print("recv raised", type(e).__name__)


def selector():
    sel = selectors.DefaultSelector()
    a, b = socket.socketpair()
    sel.register(a, selectors.EVENT_READ)
    print("select returned", sel.select(30))


def getter():
    queue.Queue().get()
    print("get returned")


def sleeper():
    time.sleep(30)
    print("sleep returned")


for wait in (acceptor, receiver, selector, getter, sleeper):
    threading.Thread(target=wait, daemon=True).start()
time.sleep(0.3)  # each thread into its call
kept = [bytearray(1000) for _ in range(10)]  # KEPT
print("main exiting")
