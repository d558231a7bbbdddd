#!/usr/bin/python3
"""logd-peer-seeds.py DIR - seed programs for fuzz/fuzz-logd-peer.

Each seed is a program of the target's operations (fuzz/fuzz_logd_peer.c):
an opcode byte (op & 15 = operation, op >> 4 & 3 = connection) followed by
its argument bytes.  The seeds are the sessions a tracer and a control
client really have, plus one broken variant of each step, so the fuzzer
starts from every branch of bp-logd's packet handling.
"""
import os
import sys

CONNECT, HELLO, CHUNK, KICK, BYE, CTL, RAW, WRITE, SHRINK, DRAIN, HANGUP, \
    PAUSE, SCRIBBLE, WELCOME_LATE, CONNECT_LAZY, TIMER = range(16)


def op(code, conn=0, *args):
    return bytes([code | conn << 4]) + bytes(args)


def hello(conn=0, sel=0, exe=b'tracer', mut=b'\0'):
    return op(HELLO, conn, sel, len(exe)) + exe + mut


def chunk(conn=0, idx=0, nslots=1, sz=12, kind=0, hmask=0, tails=None,
          mut=b'\0'):
    tails = tails if tails is not None else [0] * nslots
    return op(CHUNK, conn, idx, nslots, sz, kind, hmask) + bytes(tails) + mut


def records(conn=0, which=0, kick=True, recs=((4, b'\0'), (16, b'\0\1\2'))):
    out = op(WRITE, conn, which, 0x10 if kick else 0, len(recs) - 1)
    for typ, body in recs:
        out += bytes([len(body)]) + body + bytes([typ - 1])
    return out


def session(conn=0):
    return op(CONNECT, conn) + hello(conn) + chunk(conn) + records(conn)


def lazy_session(conn=0):
    return op(CONNECT_LAZY, conn) + hello(conn) + chunk(conn) + records(conn)


SEEDS = {
    'tracer': session() + op(DRAIN) + op(BYE, 0, 0),
    'tracer-hangup': session() + records() + op(HANGUP),
    'two-tracers': session(0) + session(1) + op(DRAIN) + op(BYE, 1, 0),
    'control-status': op(CONNECT) + op(CTL, 0, 3, 0),
    'control-pause': session() + op(PAUSE, 0, 1) + records() + op(PAUSE, 0, 0)
                     + op(CONNECT, 1) + op(CTL, 1, 3, 0),
    'bad-magic': op(CONNECT) + hello() + chunk(hmask=1) + b'\xde\xad\xbe\xef',
    'pipe-fd': op(CONNECT) + hello() + chunk(kind=5),
    'no-fd': op(CONNECT) + hello() + chunk(kind=4),
    'wrong-size': op(CONNECT) + hello() + chunk(kind=0x80) + b'\x03',
    'shrunk': session() + op(SHRINK, 0, 0, 1) + op(DRAIN),
    'shrunk-all': session() + op(SHRINK, 0, 0, 0) + op(DRAIN),
    'torn': session() + op(WRITE, 0, 0, 0x11, 5) + b'\x05\x01\x80\x00\x00\x00'
            + op(DRAIN),
    'head-jump': session() + op(WRITE, 0, 0, 0x16, 0, 0, 1, 0),
    'kick-unknown': op(CONNECT) + hello() + op(KICK, 0, 5, 7, 0),
    'ring-clash': op(CONNECT) + hello(sel=1),
    'reconnect': session(0) + op(HANGUP, 0) + op(CONNECT, 1) + hello(1, sel=2)
                 + chunk(1),
    # found by the fuzzer: an empty packet with a descriptor was taken for
    # end of file and the descriptor stayed open in bp-logd
    'empty-packet-fd': op(CONNECT) + hello() + chunk(kind=6, tails=[],
                                                      mut=b'\x08\xff'),
    'raw': op(CONNECT) + op(RAW, 0, 24, 0, 1) + bytes(range(24)),
    # forked children: through the lazy listener, accepted on the timer
    'lazy-child': lazy_session() + op(TIMER) + records() + op(TIMER),
    'lazy-child-gone': lazy_session() + op(HANGUP) + op(TIMER),
    'lazy-child-pause': lazy_session() + op(PAUSE, 1, 1) + records()
                        + op(PAUSE, 1, 0) + op(TIMER),
    'lazy-and-control': lazy_session(0) + op(CONNECT, 1) + op(CTL, 1, 3, 0)
                        + records(0) + op(HANGUP, 0),
    'many-slots': op(CONNECT) + hello() + chunk(nslots=8, tails=[0, 255] * 4)
                  + records(which=4) + op(DRAIN),
}


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: logd-peer-seeds.py DIR')
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(sys.argv[1], name), 'wb') as f:
            f.write(data)
    print('%d seeds in %s' % (len(SEEDS), sys.argv[1]))


if __name__ == '__main__':
    main()
