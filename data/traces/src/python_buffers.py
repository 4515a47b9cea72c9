import zlib
keep = []
for i in range(1200):
    buf = bytearray()
    for j in range(40):
        buf += bytes([j]) * (1000 + (i * 37 + j * 101) % 7000)
    keep.append(zlib.compress(bytes(buf), 1))
    if len(keep) > 40:
        keep.pop(i % 40)
big = [b"y" * (1 << 20) for _ in range(8)]
del big
