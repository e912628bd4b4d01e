"""Vocabulary of the bundled WebShop catalog generator (:mod:`mvpo_envs.webshop.generate`).

One :class:`ProductType` per WebShop-like search query: its category path, the nouns of its
titles, an attribute pool (what goals ask for, as WebShop's ``items_ins_v2`` attributes are
short lower-case phrases), option schemas and a price range. Five categories as in WebShop:
beauty, electronics, fashion, garden, grocery.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProductType:
    category: str
    query: str
    product_category: str
    nouns: tuple[str, ...]
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: tuple[float, float]


COLORS = ("black", "white", "navy blue", "grey", "red", "green", "pink", "beige", "brown", "purple")
APPAREL_SIZES = ("x-small", "small", "medium", "large", "x-large", "xx-large")
SHOE_SIZES = ("6", "7", "7.5", "8", "8.5", "9", "10", "11")
BEAUTY = "Beauty & Personal Care"
ELEC = "Electronics"
FASHION = "Clothing, Shoes & Jewelry"
GARDEN = "Home & Kitchen"
GROCERY = "Grocery & Gourmet Food"


def _t(category, query, path, nouns, attributes, options, price) -> ProductType:
    return ProductType(
        category, query, path, tuple(nouns), tuple(attributes), tuple(options), price
    )


TYPES: tuple[ProductType, ...] = (
    # beauty
    _t(
        "beauty",
        "shampoo",
        f"{BEAUTY} › Hair Care › Shampoo & Conditioner › Shampoos",
        ("Shampoo", "Hair Shampoo", "Cleansing Shampoo"),
        (
            "sulfate free",
            "paraben free",
            "argan oil",
            "dry hair",
            "natural ingredients",
            "tea tree",
            "color treated",
            "cruelty free",
        ),
        (
            ("size", ("8 fl oz", "12 fl oz", "16 fl oz", "32 fl oz")),
            ("scent", ("lavender", "coconut", "unscented", "citrus")),
        ),
        (6.0, 38.0),
    ),
    _t(
        "beauty",
        "face moisturizer",
        f"{BEAUTY} › Skin Care › Face › Creams & Moisturizers",
        ("Face Moisturizer", "Facial Cream", "Day Cream"),
        (
            "hyaluronic acid",
            "sensitive skin",
            "oil free",
            "anti aging",
            "fine lines",
            "vitamin c",
            "long lasting",
            "non greasy",
        ),
        (("size", ("1.7 oz", "2.5 oz", "3.4 oz")),),
        (9.0, 65.0),
    ),
    _t(
        "beauty",
        "eyeshadow palette",
        f"{BEAUTY} › Makeup › Eyes › Eyeshadow",
        ("Eyeshadow Palette", "Eye Shadow Palette", "Makeup Palette"),
        (
            "highly pigmented",
            "long lasting",
            "cruelty free",
            "easy apply",
            "matte finish",
            "shimmer",
            "travel size",
        ),
        (("color", ("nude", "smoky", "rose gold", "sunset", "galaxy")),),
        (7.0, 45.0),
    ),
    _t(
        "beauty",
        "hair brush",
        f"{BEAUTY} › Hair Care › Styling Tools › Brushes",
        ("Hair Brush", "Detangling Brush", "Paddle Brush"),
        (
            "boar bristle",
            "hair loss",
            "easy carry",
            "wet dry",
            "hair growth",
            "scalp massage",
            "non slip",
        ),
        (("color", ("black", "pink", "wood", "purple")),),
        (5.0, 30.0),
    ),
    _t(
        "beauty",
        "nail polish",
        f"{BEAUTY} › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish",
        ("Nail Polish", "Gel Nail Polish", "Nail Lacquer"),
        ("quick dry", "long lasting", "non toxic", "high gloss", "chip resistant", "vegan formula"),
        (
            ("color", ("ruby red", "ballet pink", "midnight blue", "clear", "coral")),
            ("size", ("0.5 fl oz", "pack of 3")),
        ),
        (4.0, 22.0),
    ),
    # electronics
    _t(
        "electronics",
        "wireless earbuds",
        f"{ELEC} › Headphones, Earbuds & Accessories › Earbuds",
        ("Wireless Earbuds", "Bluetooth Earbuds", "Earphones"),
        (
            "noise cancelling",
            "water resistant",
            "charging case",
            "long battery life",
            "hands free",
            "touch control",
            "fast charging",
        ),
        (("color", ("black", "white", "navy blue", "pink")),),
        (15.0, 120.0),
    ),
    _t(
        "electronics",
        "usb c cable",
        f"{ELEC} › Computers & Accessories › Cables › USB Cables",
        ("USB C Cable", "Charging Cable", "Charger Cord"),
        (
            "fast charging",
            "braided nylon",
            "data sync",
            "high speed",
            "durable design",
            "tangle free",
        ),
        (("size", ("3 ft", "6 ft", "10 ft")), ("color", ("black", "white", "red"))),
        (5.0, 25.0),
    ),
    _t(
        "electronics",
        "portable speaker",
        f"{ELEC} › Portable Audio & Video › Portable Speakers",
        ("Bluetooth Speaker", "Portable Speaker", "Wireless Speaker"),
        (
            "water resistant",
            "stereo sound",
            "long battery life",
            "easy carry",
            "built in microphone",
            "deep bass",
        ),
        (("color", ("black", "blue", "red", "grey")),),
        (18.0, 140.0),
    ),
    _t(
        "electronics",
        "phone case",
        f"{ELEC} › Cell Phones & Accessories › Cases, Holsters & Sleeves › Cases",
        ("Phone Case", "Protective Case", "Shockproof Case"),
        (
            "shock absorbing",
            "wireless charging",
            "slim fit",
            "scratch resistant",
            "card holder",
            "raised edges",
        ),
        (
            ("color", ("black", "clear", "purple", "green", "navy blue")),
            ("size", ("6.1 inch", "6.7 inch")),
        ),
        (6.0, 35.0),
    ),
    _t(
        "electronics",
        "hdmi cable",
        f"{ELEC} › Television & Video › Accessories › Cables › HDMI Cables",
        ("HDMI Cable", "High Speed HDMI Cord", "HDMI Adapter Cable"),
        (
            "4k ultra hd",
            "high speed",
            "gold plated",
            "plug play",
            "ethernet support",
            "braided cord",
        ),
        (("size", ("3 ft", "6 ft", "15 ft")),),
        (6.0, 30.0),
    ),
    # fashion
    _t(
        "fashion",
        "t-shirt",
        f"{FASHION} › Men › Clothing › Shirts › T-Shirts",
        ("T-Shirt", "Crew Neck Tee", "Graphic Tee"),
        (
            "short sleeve",
            "cotton jersey",
            "machine wash",
            "classic fit",
            "moisture wicking",
            "relaxed fit",
            "tagless label",
        ),
        (("color", COLORS[:6]), ("size", APPAREL_SIZES[:5])),
        (9.0, 35.0),
    ),
    _t(
        "fashion",
        "running shoes",
        f"{FASHION} › Women › Shoes › Athletic › Running",
        ("Running Shoes", "Sneakers", "Athletic Shoes"),
        (
            "rubber sole",
            "memory foam",
            "non slip",
            "lace up",
            "arch support",
            "breathable mesh",
            "lightweight design",
        ),
        (("size", SHOE_SIZES[:6]), ("color", ("black", "white", "grey", "pink"))),
        (25.0, 110.0),
    ),
    _t(
        "fashion",
        "yoga pants",
        f"{FASHION} › Women › Clothing › Active › Leggings",
        ("Yoga Pants", "Leggings", "Workout Pants"),
        (
            "high waist",
            "tummy control",
            "squat proof",
            "moisture wicking",
            "side pockets",
            "four way stretch",
        ),
        (("size", APPAREL_SIZES[:5]), ("color", ("black", "navy blue", "grey", "purple"))),
        (12.0, 45.0),
    ),
    _t(
        "fashion",
        "winter jacket",
        f"{FASHION} › Men › Clothing › Jackets & Coats › Down Jackets",
        ("Winter Jacket", "Puffer Jacket", "Hooded Coat"),
        (
            "water resistant",
            "zip closure",
            "detachable hood",
            "fleece lined",
            "windproof",
            "quilted design",
        ),
        (("color", ("black", "navy blue", "green", "red")), ("size", APPAREL_SIZES[1:6])),
        (35.0, 160.0),
    ),
    _t(
        "fashion",
        "crossbody bag",
        f"{FASHION} › Women › Handbags & Wallets › Crossbody Bags",
        ("Crossbody Bag", "Shoulder Bag", "Purse"),
        (
            "vegan leather",
            "adjustable strap",
            "zipper closure",
            "card slots",
            "lightweight design",
            "multiple pockets",
        ),
        (("color", ("black", "brown", "beige", "red", "pink")),),
        (14.0, 70.0),
    ),
    # garden (home & kitchen)
    _t(
        "garden",
        "console table",
        f"{GARDEN} › Furniture › Living Room Furniture › Tables › Sofa & Console Tables",
        ("Console Table", "Sofa Table", "Entryway Table"),
        (
            "solid wood",
            "easy assemble",
            "storage space",
            "living room",
            "metal frame",
            "rustic finish",
        ),
        (("color", ("walnut", "black", "white", "grey")),),
        (60.0, 320.0),
    ),
    _t(
        "garden",
        "throw pillow covers",
        f"{GARDEN} › Bedding › Decorative Pillows, Inserts & Covers › Throw Pillow Covers",
        ("Throw Pillow Covers", "Cushion Covers", "Pillow Cases"),
        (
            "machine washable",
            "invisible zipper",
            "living room",
            "soft velvet",
            "double sided",
            "fade resistant",
        ),
        (
            ("size", ("18 x 18 inch", "20 x 20 inch", "12 x 20 inch")),
            ("color", ("beige", "green", "navy blue", "pink")),
        ),
        (8.0, 35.0),
    ),
    _t(
        "garden",
        "coffee mug",
        f"{GARDEN} › Kitchen & Dining › Dining & Entertaining › Cups, Mugs & Saucers › Mugs",
        ("Coffee Mug", "Ceramic Mug", "Tea Cup"),
        (
            "dishwasher safe",
            "microwave safe",
            "lead free",
            "large capacity",
            "gift box",
            "heat resistant",
        ),
        (("size", ("12 oz", "16 oz", "20 oz")), ("color", ("white", "black", "blue"))),
        (7.0, 30.0),
    ),
    _t(
        "garden",
        "led desk lamp",
        f"{GARDEN} › Lighting & Ceiling Fans › Lamps & Shades › Desk Lamps",
        ("Desk Lamp", "LED Lamp", "Reading Light"),
        (
            "eye caring",
            "dimmable light",
            "usb charging port",
            "touch control",
            "energy saving",
            "adjustable arm",
        ),
        (("color", ("black", "white", "silver")),),
        (16.0, 75.0),
    ),
    _t(
        "garden",
        "bath towels",
        f"{GARDEN} › Bath › Towels › Bath Towels",
        ("Bath Towels", "Towel Set", "Cotton Towels"),
        (
            "highly absorbent",
            "quick dry",
            "soft cotton",
            "machine washable",
            "hotel quality",
            "lint free",
        ),
        (
            ("color", ("white", "grey", "navy blue", "beige")),
            ("size", ("pack of 2", "pack of 4", "pack of 6")),
        ),
        (15.0, 60.0),
    ),
    # grocery
    _t(
        "grocery",
        "protein bars",
        f"{GROCERY} › Snack Foods › Bars › Protein Bars",
        ("Protein Bars", "Snack Bars", "Energy Bars"),
        (
            "gluten free",
            "low sugar",
            "high protein",
            "non gmo",
            "plant based",
            "keto friendly",
            "dairy free",
        ),
        (
            ("flavor name", ("chocolate", "peanut butter", "vanilla almond", "berry")),
            ("size", ("pack of 12", "pack of 24")),
        ),
        (12.0, 48.0),
    ),
    _t(
        "grocery",
        "green tea",
        f"{GROCERY} › Beverages › Tea › Green Tea",
        ("Green Tea", "Tea Bags", "Loose Leaf Tea"),
        (
            "usda organic",
            "caffeine free",
            "natural ingredients",
            "individually wrapped",
            "non gmo",
            "antioxidant rich",
        ),
        (
            ("flavor name", ("jasmine", "mint", "lemon ginger", "original")),
            ("size", ("20 count", "100 count")),
        ),
        (5.0, 28.0),
    ),
    _t(
        "grocery",
        "coffee beans",
        f"{GROCERY} › Beverages › Coffee, Tea & Cocoa › Coffee › Whole Coffee Beans",
        ("Coffee Beans", "Whole Bean Coffee", "Espresso Beans"),
        ("medium roast", "dark roast", "fair trade", "single origin", "usda organic", "low acid"),
        (("size", ("12 ounce", "2 pound", "5 pound")),),
        (9.0, 55.0),
    ),
    _t(
        "grocery",
        "olive oil",
        f"{GROCERY} › Pantry Staples › Cooking Oils › Olive Oil",
        ("Olive Oil", "Extra Virgin Olive Oil", "Cooking Oil"),
        (
            "cold pressed",
            "extra virgin",
            "non gmo",
            "glass bottle",
            "first cold press",
            "kosher certified",
        ),
        (("size", ("16.9 fl oz", "25.5 fl oz", "1 liter")),),
        (8.0, 40.0),
    ),
    _t(
        "grocery",
        "mixed nuts",
        f"{GROCERY} › Snack Foods › Nuts & Seeds › Mixed Nuts",
        ("Mixed Nuts", "Roasted Nuts", "Trail Mix"),
        (
            "lightly salted",
            "resealable bag",
            "high protein",
            "gluten free",
            "no artificial",
            "kosher certified",
        ),
        (
            ("size", ("1 pound", "2 pound", "3 pound")),
            ("flavor name", ("honey roasted", "sea salt", "unsalted")),
        ),
        (8.0, 35.0),
    ),
)

BRANDS = (
    "Avalon",
    "Brightwell",
    "Cedarline",
    "Dunmore",
    "Elmwood",
    "Fairhaven",
    "Glenrock",
    "Hollis",
    "Ironbark",
    "Juniper",
    "Kestrel",
    "Larkspur",
    "Meridian",
    "Northwind",
    "Oakridge",
    "Pinecrest",
    "Quillon",
    "Redfern",
    "Silvan",
    "Tamarack",
    "Umbra",
    "Vantage",
    "Westbrook",
    "Yarrow",
    "Zephyr",
)
STYLE_WORDS = (
    "Classic",
    "Premium",
    "Everyday",
    "Essential",
    "Deluxe",
    "Signature",
    "Original",
    "Select",
)
AUDIENCES = (
    "for Women",
    "for Men",
    "for Kids",
    "for Home",
    "for Travel",
    "for Office",
    "for Gift",
    "",
)
REVIEW_TITLES = (
    "Great value",
    "Works as described",
    "Not what I expected",
    "Love it",
    "Good quality",
    "Would buy again",
    "Just okay",
)
REVIEW_BODIES = (
    "Arrived quickly and does the job.",
    "Quality is better than the price suggests.",
    "Smaller than I thought, but fine.",
    "Exactly as pictured.",
    "My second purchase, still happy.",
    "Decent, nothing special.",
)
INSTRUCTION_TEMPLATES = (
    "Find me {attrs} {query}",
    "Find me {query} with {attrs}",
    "Find me {first} {query} with {rest}",
)
HUMAN_TEMPLATES = (
    "i am looking for {a} {query} that is {attrs}",
    "i need {query} which is {attrs}",
    "im looking for {attrs} {query}",
    "i want to buy {query}, it should be {attrs}",
)
