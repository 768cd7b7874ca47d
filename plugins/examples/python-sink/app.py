"""An event sink in Python: posts each batch of events (CloudEvents 1.0, a JSON array
in the batched mode of the CloudEvents HTTP binding) to the path of its `url`, and
logs one line per event.

Its `[events.plugin.<name>]` grants `http` and names the `url`. A batch the receiver
does not take with a 2xx is raised as an error: the server sends it again with
backoff, so a receiver deduplicates by each event's `id`.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import config, http, log


class EventSink(exports.EventSink):
    def deliver(self, events):
        for text in events:
            event = json.loads(text)
            log.log(log.Level.INFO, f"{event['type']} {event.get('subject', '')} ({event['id']})")
        path = config.get("base_path") or "/"
        body = ("[" + ",".join(events) + "]").encode()
        headers = [("content-type", "application/cloudevents-batch+json")]
        try:
            answer = http.send(http.Request(method="POST", path=path, headers=headers, body=body))
        except Err as e:
            raise Err(f"the receiver could not be reached: {e.value}")
        if not 200 <= answer.status < 300:
            raise Err(f"the receiver answered {answer.status}")
