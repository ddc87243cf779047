"""agent/listSessions from the index: the same answer after the index is deleted, a torn
session file still listed, and the index following files another process wrote."""

from __future__ import annotations

import json

from .harness import reply, text


async def test_the_index_is_rebuilt_after_deleting_it_and_a_torn_file_is_listed(start_tiller, tmp_path, workspace):
    client = await start_tiller([reply(text(f"Answer {n}.")) for n in range(3)])
    ids = []
    for n in range(3):
        session = await client.new_session(tools=[])
        await client.prompt(session, f"Question {n}\nwith details").result()
        await client.request("agent/closeSession", {"sessionId": session})
        ids.append(session)
    sessions_dir = tmp_path / "tiller-data" / "sessions"

    def summaries(listed: dict) -> list[tuple[str, int, str, bool]]:
        return [(s["sessionId"], s["messageCount"], s["title"], s["loaded"]) for s in listed["sessions"]]

    first = await client.request("agent/listSessions")
    assert sorted(summaries(first)) == sorted((ids[n], 2, f"Question {n}", False) for n in range(3))
    assert (sessions_dir / "index.sqlite3").is_file()

    for path in sessions_dir.glob("index.sqlite3*"):
        path.unlink()
    assert summaries(await client.request("agent/listSessions")) == summaries(first)

    # A crash mid-write tore the last line of one file: the session is still listed as it was.
    with (sessions_dir / f"{ids[0]}.jsonl").open("a") as handle:
        handle.write('{"type":"message","message":{"role":"assistant","content":[{"type":"te')
    torn = {s["sessionId"]: s for s in (await client.request("agent/listSessions"))["sessions"]}
    assert (torn[ids[0]]["messageCount"], torn[ids[0]]["title"]) == (2, "Question 0")

    # A session written by another tiller process shows up; one deleted by it goes away.
    header = json.loads((sessions_dir / f"{ids[1]}.jsonl").read_text().splitlines()[0])
    other = dict(header, id="fromelsewhere", cwd="/somewhere/else")
    (sessions_dir / "fromelsewhere.jsonl").write_text(json.dumps(other) + "\n")
    (sessions_dir / f"{ids[2]}.jsonl").unlink()
    listed = {s["sessionId"]: s for s in (await client.request("agent/listSessions"))["sessions"]}
    assert set(listed) == {ids[0], ids[1], "fromelsewhere"}
    assert listed["fromelsewhere"]["title"] == "(new session)" and listed["fromelsewhere"]["messageCount"] == 0
    only_here = await client.request("agent/listSessions", {"cwd": str(workspace)})
    assert {s["sessionId"] for s in only_here["sessions"]} == {ids[0], ids[1]}
