"""Shared test data: a small dinosaur database shaped like the one the official
firebase-admin-python integration suite uses (rest-and-rules.md section 1.7.4).

The values are our own; they are chosen so that every ordering and filter result
listed in section 1.7.4 holds for them:

* heights:  linhenykus 0.6, pterodactyl 0.6, lambeosaurus 2.1, triceratops 3,
            stegosaurus 4, bruhathkayosaurus 25 (the 0.6 tie is broken by key)
* scores:   stegosaurus 5, lambeosaurus 21, triceratops 22, bruhathkayosaurus 55,
            linhenykus 80, pterodactyl 93
* ratings/pos >= 4: pterodactyl, stegosaurus, triceratops
"""

DINOSAURS = {
    'bruhathkayosaurus': {
        'appeared': -70000000, 'height': 25, 'length': 44, 'order': 'saurischia',
        'vanished': -70000000, 'weight': 135000, 'ratings': {'pos': 1},
    },
    'lambeosaurus': {
        'appeared': -76000000, 'height': 2.1, 'length': 12.5, 'order': 'ornithischia',
        'vanished': -75000000, 'weight': 5000, 'ratings': {'pos': 2},
    },
    'linhenykus': {
        'appeared': -85000000, 'height': 0.6, 'length': 1, 'order': 'theropoda',
        'vanished': -75000000, 'weight': 3, 'ratings': {'pos': 3},
    },
    'pterodactyl': {
        'appeared': -150000000, 'height': 0.6, 'length': 0.8, 'order': 'pterosauria',
        'vanished': -148500000, 'weight': 2, 'ratings': {'pos': 4},
    },
    'stegosaurus': {
        'appeared': -155000000, 'height': 4, 'length': 9, 'order': 'ornithischia',
        'vanished': -150000000, 'weight': 2500, 'ratings': {'pos': 5},
    },
    'triceratops': {
        'appeared': -68000000, 'height': 3, 'length': 8, 'order': 'ornithischia',
        'vanished': -66000000, 'weight': 11000, 'ratings': {'pos': 6},
    },
}

SCORES = {
    'bruhathkayosaurus': 55,
    'lambeosaurus': 21,
    'linhenykus': 80,
    'pterodactyl': 93,
    'stegosaurus': 5,
    'triceratops': 22,
}

DINODB = {'dinosaurs': DINOSAURS, 'scores': SCORES}

KEY_SORTED = [
    'bruhathkayosaurus', 'lambeosaurus', 'linhenykus',
    'pterodactyl', 'stegosaurus', 'triceratops',
]
HEIGHT_SORTED = [
    'linhenykus', 'pterodactyl', 'lambeosaurus',
    'triceratops', 'stegosaurus', 'bruhathkayosaurus',
]
SCORE_SORTED = [
    'stegosaurus', 'lambeosaurus', 'triceratops',
    'bruhathkayosaurus', 'linhenykus', 'pterodactyl',
]


def index_rules():
    """The `.indexOn` rules a `dinodb` node needs (placed at its path in the rules tree)."""
    return {
        'dinosaurs': {'.indexOn': ['height', 'ratings/pos']},
        'scores': {'.indexOn': '.value'},
    }
