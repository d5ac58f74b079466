#!/usr/bin/env python3
"""Writes customers.csv: 600 made-up customers, their features and plan (the class to predict).

The plan (basic, plus or premium) follows from a score of income, visits and region, with noise;
a few rows lack their age (an empty field), which the sweep fills with the training split's mean
("missing": "mean"). Run it to regenerate the file the example ships with (the same seed gives the
same file).
"""
import random

rng = random.Random(0)
bonus = {"north": 0.0, "south": 0.5, "east": -0.5, "west": 1.0}
with open("customers.csv", "w") as out:
    out.write("age,income,visits,region,plan\n")
    for i in range(600):
        age = rng.randint(18, 80)
        income = round(rng.uniform(20, 120), 1)
        visits = rng.randint(0, 30)
        region = rng.choice(sorted(bonus))
        score = income / 30 + visits / 10 + bonus[region] + rng.gauss(0, 0.4)
        plan = "basic" if score < 3 else "plus" if score < 4.5 else "premium"
        out.write(f"{'' if i % 50 == 7 else age},{income},{visits},{region},{plan}\n")
