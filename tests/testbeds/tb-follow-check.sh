#!/bin/bash
# tb-follow-check.sh - tb-follow.sh with every window pass the kept merge
# makes (docs/reconstruct.md, "The kept merge") also made at once, over a
# copy of exactly the bytes of the logs the kept pass read, and compared
# table by table (BP_FOLLOW_KEEPER=check: a difference stops
# bp-reconstruct --follow with an error, both databases kept).  The lag
# is not what this run measures (each pass is made twice): its bound is
# 8 s.  Everything else as tb-follow.sh.
export BP_FOLLOW_KEEPER=check
: "${TB_FOLLOW_MAXLAG:=8}"
. "$(dirname "$0")/tb-follow.sh"
