#!/usr/bin/env python3
"""Writes houses.csv: 400 made-up houses, their features and price (the regression target).

price (thousands) = 40 * rooms + 1.5 * area - 0.8 * age + a district's premium + noise.
Run it to regenerate the file the example ships with (the same seed gives the same file).
"""
import random

rng = random.Random(0)
premium = {"center": 120.0, "harbor": 60.0, "suburb": 0.0}
with open("houses.csv", "w") as out:
    out.write("rooms,area,age,district,price\n")
    for _ in range(400):
        rooms = rng.randint(1, 6)
        area = round(rng.uniform(30, 60) + 20 * rooms, 1)
        age = rng.randint(0, 80)
        district = rng.choice(sorted(premium))
        price = 40 * rooms + 1.5 * area - 0.8 * age + premium[district] + rng.gauss(0, 10)
        out.write(f"{rooms},{area},{age},{district},{price:.1f}\n")
