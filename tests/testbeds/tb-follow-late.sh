#!/bin/bash
# tb-follow-late.sh - tb-follow.sh with php-fpm's and PostgreSQL's records
# drained seconds after nginx's (TB_FOLLOW_LATE=1: a second bp-logd that
# drains every 3 s): live mode must write nginx's part alone as uncertain,
# never as an exact path, and send no request to the OTLP receiver or
# ClickHouse before its late records came (docs/reconstruct.md, "Records
# on their way").  Everything else as tb-follow.sh.
TB_FOLLOW_LATE=1
. "$(dirname "$0")/tb-follow.sh"
