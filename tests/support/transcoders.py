"""The library's JSON transcoder and countersign's, each with the transcodings an application
registers: the pair the transcoder's tests compare byte for byte."""

from __future__ import annotations

from countersign.infrastructure.persistence.transcoder import FastJSONTranscoder
from eventsourcing.application import Application
from eventsourcing.persistence import JSONTranscoder


def library_transcoder() -> JSONTranscoder:
    transcoder = JSONTranscoder()
    Application().register_transcodings(transcoder)
    return transcoder


def fast_transcoder() -> FastJSONTranscoder:
    transcoder = FastJSONTranscoder()
    Application().register_transcodings(transcoder)
    return transcoder
