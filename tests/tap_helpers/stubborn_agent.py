"""A stand-in agent that ignores SIGTERM and never exits by itself: tap must still end the session."""
import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdin.read()
while True:
    time.sleep(1)
