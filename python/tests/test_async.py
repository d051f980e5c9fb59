"""asyncio: reads and writes run in worker threads; the event loop keeps running while a read is in flight."""
from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

import zgpu
from zg_helpers import assert_same, make_data


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    # big enough that decoding takes a noticeable time (gzip, 32 MiB)
    path = tmp_path_factory.mktemp("async") / "big.zarr"
    data = make_data((2048, 2048), "float64", seed=1)
    a = zgpu.create(path, shape=data.shape, dtype=data.dtype, chunks=(256, 256), compressors="gzip")
    a[...] = data
    return zgpu.open_array(path), data


def test_event_loop_stays_responsive_during_read(big):
    a, data = big

    async def main():
        ticks = []
        done = asyncio.Event()

        async def ticker():
            while not done.is_set():
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.002)

        t = asyncio.create_task(ticker())
        await asyncio.sleep(0)  # let the ticker start
        t0 = time.perf_counter()
        result = await a.read_async()
        t1 = time.perf_counter()
        done.set()
        await t
        return result, ticks, t1 - t0

    result, ticks, duration = asyncio.run(main())
    assert_same(result, data)
    # the concurrent coroutine kept running while the read was in flight
    during = [x for x in ticks]
    assert len(during) >= 3, (len(during), duration)
    gaps = np.diff(during)
    assert gaps.max() < max(0.05, duration / 2), (gaps.max(), duration)


def test_concurrent_async_reads_and_write(tmp_path, big):
    a, data = big

    async def main():
        sels = [np.s_[0:100], np.s_[500:700, 3:900:7], np.s_[-1], np.s_[10, 20]]
        res = await asyncio.gather(*(a.read_async(s) for s in sels))
        for s, r in zip(sels, res):
            assert_same(r, data[s])
        w = zgpu.create(tmp_path / "w", shape=(50, 50), dtype="i4", chunks=(10, 10))
        await w.write_async(np.s_[5:45, ::2], np.arange(40 * 25, dtype="i4").reshape(40, 25))
        exp = np.zeros((50, 50), "i4")
        exp[5:45, ::2] = np.arange(40 * 25).reshape(40, 25)
        out = np.empty((50, 50), "i4")
        await w.read_async(out=out)
        assert_same(out, exp)

    asyncio.run(main())


def test_async_errors_propagate(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(4,), dtype="i1")

    async def main():
        with pytest.raises(IndexError):
            await a.read_async(10)

    asyncio.run(main())
