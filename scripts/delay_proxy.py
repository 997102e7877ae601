#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that holds every reply for a while: a slow
Redis (an AOF fsync, a fork for BGSAVE) for the benchmarks
(scripts/bench-cluster.sh, BENCH_REDIS_DELAY_MS). Each chunk the target
sends goes on --delay-ms after it arrived, in order; what the client sends
goes on at once. So every round trip through it takes --delay-ms longer.
Prints its port on stdout, then runs until killed.

  python3 scripts/delay_proxy.py --target 6379 --delay-ms 50
"""
import argparse
import asyncio


async def pump(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def send():
        while True:
            at, data = await queue.get()
            wait = at - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                writer.close()
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(send())
    try:
        while True:
            data = await reader.read(1 << 16)
            await queue.put((loop.time() + delay, data or None))
            if not data:
                break
    except ConnectionError:
        await queue.put((loop.time(), None))
    await sender


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=int, required=True, help="the target's port on 127.0.0.1")
    ap.add_argument("--delay-ms", type=float, default=50, help="added to each reply")
    args = ap.parse_args()

    async def serve(client_r, client_w):
        try:
            target_r, target_w = await asyncio.open_connection("127.0.0.1", args.target)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(pump(client_r, target_w, 0),
                             pump(target_r, client_w, args.delay_ms / 1000),
                             return_exceptions=True)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
